import Foundation
import ServiceRuntime
import Testing

@Suite("Services keep the memory they free (in-process)")
struct MemoryTuningTests {
    @Test func glibcTakesTheThresholds() {
        // mallopt refuses a threshold beyond its own ceiling: this fails if the values are.
        #expect(MemoryTuning.apply(environment: [:]))
    }

    @Test(arguments: ["GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"])
    func mallocSettingsInTheEnvironmentWin(_ variable: String) {
        #expect(!MemoryTuning.apply(environment: [variable: "glibc.malloc.trim_threshold=1"]))
    }

    @Test func theProcessEnvironmentIsReadAsTheDictionaryWouldBe() {
        #expect(MemoryTuning.applyToProcess() == MemoryTuning.apply(environment: ProcessInfo.processInfo.environment))
    }
}
