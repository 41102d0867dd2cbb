/* Bounded waits on a CUDA device, with a kernel that spins until the test
 * releases it (tests/cuda/bounded_waits.h says what is checked). The
 * kernel is PTX, which every driver from Turing on loads, so the test
 * needs no nvcc at build time. Needs a CUDA device (exit 77, skipped,
 * without one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bounded_waits.h"

/* kiln_test_spin(unsigned *flag, unsigned *done): a volatile load reads
 * memory every time, where the test's write from the host lands. */
static const char spin_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry kiln_test_spin(\n"
    "    .param .u64 flag,\n"
    "    .param .u64 done)\n"
    "{\n"
    "    .reg .pred %p1;\n"
    "    .reg .b32 %r1;\n"
    "    .reg .b64 %rd<5>;\n"
    "\n"
    "    ld.param.u64 %rd1, [flag];\n"
    "    ld.param.u64 %rd2, [done];\n"
    "    cvta.to.global.u64 %rd3, %rd1;\n"
    "    cvta.to.global.u64 %rd4, %rd2;\n"
    "$L_spin:\n"
    "    ld.volatile.global.u32 %r1, [%rd3];\n"
    "    setp.eq.u32 %p1, %r1, 0;\n"
    "    @%p1 bra $L_spin;\n"
    "    st.global.u32 [%rd4], %r1;\n"
    "    ret;\n"
    "}\n";

int main(void) {
  const kiln_module_image image = {KILN_IMAGE_PTX, spin_ptx, sizeof spin_ptx};
  return bounded_waits_main(KILN_BACKEND_CUDA, &image, "cuda: bounded waits");
}
