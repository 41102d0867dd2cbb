/* The optional abilities of a CUDA or HIP device, from its architecture
 * name: the drivers answer no such question, but what each architecture
 * can do is fixed (NVIDIA's PTX ISA and CUDA programming guide, AMD's ISA
 * guides). Vulkan asks its driver instead (backends/vulkan/device.c). */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

static void add_shape(kiln_device_properties *p, uint32_t m, uint32_t n,
                      uint32_t k, kiln_matrix_type in, kiln_matrix_type acc) {
  if (p->matrix_shape_count < KILN_MAX_MATRIX_SHAPES)
    p->matrix_shapes[p->matrix_shape_count++] =
        (kiln_matrix_shape){m, n, k, in, in, acc, acc};
}

/* sm_XY: compute capability X.Y. The matrix shapes are those of the
 * warp-wide wmma API (nvcuda::wmma), which every architecture with tensor
 * cores offers. */
static void nvidia(kiln_device_properties *p, unsigned cc) {
  p->features = KILN_FEATURE_FLOAT64 | KILN_FEATURE_INT8 |
                KILN_FEATURE_FLOAT32_ATOMIC_ADD;
  if (cc >= 53) p->features |= KILN_FEATURE_FLOAT16;
  if (cc >= 60) p->features |= KILN_FEATURE_FLOAT64_ATOMIC_ADD;
  if (cc >= 61) p->features |= KILN_FEATURE_INT8_DOT_PRODUCT;
  if (cc >= 70) {
    p->features |= KILN_FEATURE_COOPERATIVE_MATRIX;
    add_shape(p, 16, 16, 16, KILN_MATRIX_F16, KILN_MATRIX_F32);
    add_shape(p, 16, 16, 16, KILN_MATRIX_F16, KILN_MATRIX_F16);
  }
  if (cc >= 72) {
    add_shape(p, 16, 16, 16, KILN_MATRIX_S8, KILN_MATRIX_S32);
    add_shape(p, 16, 16, 16, KILN_MATRIX_U8, KILN_MATRIX_S32);
  }
  if (cc >= 80) {
    p->features |= KILN_FEATURE_BFLOAT16;
    add_shape(p, 16, 16, 16, KILN_MATRIX_BF16, KILN_MATRIX_F32);
    add_shape(p, 8, 8, 4, KILN_MATRIX_F64, KILN_MATRIX_F64);
  }
}

/* gfxNNN: the matrix shapes are rocWMMA's, on the MFMA (CDNA: gfx908,
 * gfx90a, gfx94x) and WMMA (RDNA 3: gfx11xx) instructions. HIP's
 * atomicAdd on float and double works on every target (a compare-and-swap
 * loop where there is no instruction). */
static void amd(kiln_device_properties *p, const char *gfx) {
  p->features = KILN_FEATURE_FLOAT16 | KILN_FEATURE_FLOAT64 |
                KILN_FEATURE_INT8 | KILN_FEATURE_FLOAT32_ATOMIC_ADD |
                KILN_FEATURE_FLOAT64_ATOMIC_ADD;
  unsigned version = 0;
  sscanf(gfx, "%x", &version); /* "90a" -> 0x90a, "1030" -> 0x1030 */
  const bool cdna = strncmp(gfx, "908", 3) == 0 ||
                    strncmp(gfx, "90a", 3) == 0 || strncmp(gfx, "94", 2) == 0;
  const bool rdna3 = strncmp(gfx, "11", 2) == 0 && strlen(gfx) == 4;
  const bool rdna4 = strncmp(gfx, "12", 2) == 0 && strlen(gfx) == 4;
  /* bfloat16 instructions: CDNA 2 and 3 (MFMA, packed conversions), RDNA 3
   * and 4 (WMMA, dot products); gfx908 and older convert in software. */
  if ((cdna && strncmp(gfx, "908", 3) != 0) || rdna3 || rdna4)
    p->features |= KILN_FEATURE_BFLOAT16;
  if (version == 0x906 || cdna || version >= 0x1030)
    p->features |= KILN_FEATURE_INT8_DOT_PRODUCT;
  if (cdna || rdna3) {
    p->features |= KILN_FEATURE_COOPERATIVE_MATRIX;
    add_shape(p, 16, 16, 16, KILN_MATRIX_F16, KILN_MATRIX_F32);
    add_shape(p, 16, 16, 16, KILN_MATRIX_S8, KILN_MATRIX_S32);
    if (strncmp(gfx, "908", 3) != 0)
      add_shape(p, 16, 16, 16, KILN_MATRIX_BF16, KILN_MATRIX_F32);
  }
  if (cdna) add_shape(p, 32, 32, 8, KILN_MATRIX_F16, KILN_MATRIX_F32);
  if (cdna && strncmp(gfx, "908", 3) != 0)
    add_shape(p, 16, 16, 4, KILN_MATRIX_F64, KILN_MATRIX_F64);
}

void kiln_features_from_architecture(kiln_device_properties *p) {
  p->features = 0;
  p->matrix_shape_count = 0;
  /* Kernels run with the one subgroup (warp, wavefront) size. */
  p->min_subgroup_size = p->max_subgroup_size = p->subgroup_size;
  /* "sm_75" is 7.5, "sm_100" 10.0: ten times the compute capability. */
  unsigned cc = 0;
  if (sscanf(p->architecture, "sm_%u", &cc) == 1)
    nvidia(p, cc);
  else if (strncmp(p->architecture, "gfx", 3) == 0)
    amd(p, p->architecture + 3);
}
