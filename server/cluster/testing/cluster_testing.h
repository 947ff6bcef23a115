/* For tests only (their include path has this directory, no library's has): what a test
 * may change in the cluster that the server never does. */
#ifndef FRUGAL_CLUSTER_TESTING_H
#define FRUGAL_CLUSTER_TESTING_H

#include <stdint.h>

/* Replace cluster_now_ms's wall clock by now_ms (NULL restores it). Set it before any
 * thread uses the cluster. */
void cluster_set_clock_for_testing(int64_t (*now_ms)(void));

#endif
