/* Bounded waits on a HIP device, with a kernel that spins until the test
 * releases it: the twin of tests/cuda/test_bounded_waits.c (its
 * bounded_waits.h says what is checked), on kernels/spin.hip as
 * tests/hip/meson.build compiles it, so that it runs on AMD and on the
 * HIP-on-CUDA shim alike. Needs a HIP device (exit 77, skipped, without
 * one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../cuda/bounded_waits.h"

extern const kiln_module_image hip_spin_images[];

int main(void) {
  return bounded_waits_main(KILN_BACKEND_HIP, &hip_spin_images[0],
                            "hip: bounded waits");
}
