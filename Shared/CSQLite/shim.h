#ifndef MEOW_CSQLITE_SHIM_H
#define MEOW_CSQLITE_SHIM_H
#include <sqlite3.h>

// Variadic SQLite entry points are not callable from Swift: fixed-argument wrappers.
static inline int meow_sqlite3_db_config_int(sqlite3 *db, int op, int value, int *result) {
    return sqlite3_db_config(db, op, value, result);
}

// SQLITE_CONFIG_MEMSTATUS: whether every allocation is counted under one process-wide mutex.
static inline int meow_sqlite3_config_memstatus(int on) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, on);
}
#endif
