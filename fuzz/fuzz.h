/* The entry point libFuzzer calls with each input; every fuzz/fuzz_*.c defines it. */
#ifndef FRUGAL_FUZZ_H
#define FRUGAL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Run one input through the code under test; returns 0. A failed property check traps. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
