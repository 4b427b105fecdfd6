#ifndef CLIBFUZZER_H
#define CLIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver, for a program that keeps its own `main` (compiler-rt's FuzzerDriver.cpp).
/// Only a build with `-sanitize=fuzzer` links it; PurseFuzz calls it only in such a build.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
