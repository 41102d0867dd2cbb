/*
 * The binary images the CUDA and HIP backends load, read in one place: the
 * magic numbers that tell them apart (files.c, params_hip.c); what the
 * backends' module.c reads before a driver that takes no size reads an
 * image (that what it claims lies within its size, the GPU a PTX image is
 * for); and kernel parameter lists for the core's argument checks
 * (launch.c): params_cuda.c reads the `.entry` lists of PTX, the
 * EIATTR_KPARAM_INFO attributes of a cubin's `.nv.info.<kernel>` sections,
 * and whichever of those a fatbin holds uncompressed; params_hip.c an
 * AMDGPU code object's metadata. Pure functions of the image's bytes, with
 * every length checked against its size, so that tests feed them images
 * without a GPU. They live in the core because both backends read both
 * kinds (HIP on NVIDIA loads CUDA images), and need no vendor header.
 */
#ifndef KILN_CORE_PARAMS_H
#define KILN_CORE_PARAMS_H

#include "core/backend.h"

/* One kernel's parameters, in order. */
typedef struct kiln_kernel_params {
  char *name; /* the entry's symbol: mangled where C++ mangled it */
  size_t count;
  kiln_param_info *params; /* count entries; NULL when count is 0 */
} kiln_kernel_params;

/* The kernels an image describes, sorted by name, each name once. */
typedef struct kiln_param_table {
  size_t count;
  kiln_kernel_params *kernels;
  /* Whether a kernel of the image may call device printf: the image names
   * vprintf (CUDA) or __ockl_printf (AMDGPU), or kiln cannot see (only
   * compressed code). The backends flush the driver's printf buffer after
   * a wait only for such modules, as a flush costs a wait of the driver's
   * that kiln's own polling does not make. */
  bool may_printf;
} kiln_param_table;

/* Reads the parameter lists of a PTX, cubin or fatbin image into *out
 * (zeroed first). What cannot be read leaves the kernels concerned out of
 * the table, since the driver, not kiln, judges the image: a compressed
 * fatbin entry, a PTX parameter of a type kiln does not know, a damaged
 * section. Fails only for lack of host memory (with the error set), and
 * then leaves *out empty. */
kiln_status kiln_params_read_cuda(kiln_image_format format, const void *data,
                                  size_t size, kiln_param_table *out);

/* Reads the parameter lists of a HIP image into *out (zeroed first): from
 * a bundle, the code object for `target` ("gfx90a", the device's
 * architecture without features), else its first AMDGPU one. Hidden
 * arguments (.value_kind "hidden_...") are not parameters. What cannot be
 * read leaves kernels out, as kiln_params_read_cuda does (a compressed
 * bundle, a code object older than MessagePack metadata). Fails only for
 * lack of host memory, leaving *out empty. */
kiln_status kiln_params_read_hip(const void *data, size_t size,
                                 const char *target, kiln_param_table *out);

/* Whether `needle` occurs in the `size` bytes at `data`. */
bool kiln_bytes_contain(const void *data, size_t size, const char *needle);

/* The kernel `name` of the table, or NULL. */
const kiln_kernel_params *kiln_param_table_find(const kiln_param_table *table,
                                                const char *name);

/* Frees the table's contents and zeroes it (a zeroed table is empty). */
void kiln_param_table_free(kiln_param_table *table);

/* ---- For the image readers (CUDA's and HIP's) ------------------------------ */

/* Appends a kernel to the table, taking `name` (count bytes, not
 * terminated) and copying the list; false for lack of host memory. */
bool kiln_param_table_add(kiln_param_table *table, const char *name,
                          size_t name_size, const kiln_param_info *params,
                          size_t count);

/* Sorts the table by name and keeps, for each name, the kernel added
 * first. */
void kiln_param_table_finish(kiln_param_table *table);

/* Copies the kernel's list into k->params and k->param_count; false for
 * lack of host memory. */
bool kiln_kernel_params_apply(const kiln_kernel_params *kp, kiln_kernel *k);

/* ---- What an image is, by its first bytes --------------------------------- */

/* nvcc --fatbin's first four bytes, little-endian. */
#define KILN_FATBIN_MAGIC 0xba55ed50u
/* A clang offload bundle's first bytes (hipcc --genco), not terminated. */
#define KILN_BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"
#define KILN_BUNDLE_MAGIC_SIZE (sizeof KILN_BUNDLE_MAGIC - 1)
/* ELF e_machine values: a cubin's and an AMDGPU code object's. */
#define KILN_EM_CUDA 190
#define KILN_EM_AMDGPU 224

/* Why an image cannot be what its first bytes say it is, or NULL. The
 * drivers take no size with an image and trust the sizes written inside
 * it, so these check that everything those sizes claim lies within the
 * `size` bytes kiln was given, before a truncated image is read past its
 * end. kiln_image_elf_problem: a 64-bit little-endian ELF file (a cubin or
 * a code object), its header tables and the contents of every section;
 * kiln_image_fatbin_problem: a fatbin's header and payload;
 * kiln_image_bundle_problem: an offload bundle's entries (an image that
 * starts with KILN_BUNDLE_MAGIC). The reason is static, or written into
 * why[why_size]. */
const char *kiln_image_elf_problem(const void *data, size_t size, char *why,
                                   size_t why_size);
const char *kiln_image_fatbin_problem(const void *data, size_t size);
const char *kiln_image_bundle_problem(const void *data, size_t size, char *why,
                                      size_t why_size);

/* The architecture that a PTX image's .target directive names, as
 * 10 * major + minor (90 for sm_90) with its suffix ('a' for sm_90a, 'f'
 * for sm_100f, '\0' for none). False when the header has no .target that
 * kiln reads; the driver then judges the text. */
bool kiln_ptx_target(const void *data, size_t size, unsigned *arch,
                     char *suffix);

/* Whether [offset, offset + length) lies within `size` bytes. */
static inline bool kiln_within(uint64_t offset, uint64_t length,
                               uint64_t size) {
  return offset <= size && length <= size - offset;
}

/* An ELF64 little-endian image's section headers, checked to lie within
 * its size: false if it is not one. Section i's header starts at
 * data + shoff + i * shentsize. */
typedef struct kiln_elf {
  const unsigned char *data;
  size_t size;
  uint64_t shoff, shentsize, shnum, shstrndx;
} kiln_elf;

bool kiln_elf_open(kiln_elf *elf, const void *data, size_t size);

/* Section i's name (NULL if it lies outside the string table), type,
 * and contents [*out_data, *out_data + *out_size) (false if they lie
 * outside the image, or the section has none in the file). */
const char *kiln_elf_section_name(const kiln_elf *elf, uint64_t i,
                                  size_t *out_length);
uint32_t kiln_elf_section_type(const kiln_elf *elf, uint64_t i);
bool kiln_elf_section_data(const kiln_elf *elf, uint64_t i,
                           const unsigned char **out_data, size_t *out_size);

#endif /* KILN_CORE_PARAMS_H */
