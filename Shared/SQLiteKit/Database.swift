import CSQLite
