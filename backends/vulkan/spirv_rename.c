/* Renaming a SPIR-V module's entry points: shaderc names a GLSL entry
 * point "main" whatever it is asked, so compiler.c renames it to the
 * kernel's name in the words it gets back. */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

#define SPIRV_MAGIC 0x07230203u
#define SPIRV_OP_ENTRY_POINT 15u

/* The number of words of the literal string at words[0..max), NUL
 * included; 0 when it does not end within them. */
static size_t literal_words(const uint32_t *words, size_t max) {
  const char *bytes = (const char *)words;
  const char *nul = memchr(bytes, '\0', max * 4);
  return nul ? (size_t)(nul - bytes) / 4 + 1 : 0;
}

kiln_status kiln_vulkan_spirv_rename_entry_point(const uint32_t *words,
                                                 size_t count, const char *from,
                                                 const char *to,
                                                 uint32_t **out_words,
                                                 size_t *out_count) {
  if (count < 5 || words[0] != SPIRV_MAGIC)
    return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                          "vulkan: the compiled shader is not SPIR-V");
  size_t to_words = strlen(to) / 4 + 1, from_len = strlen(from);
  /* First pass: the size of the result. */
  size_t size = count, renamed = 0;
  for (size_t i = 5; i < count;) {
    size_t wc = words[i] >> 16;
    if (wc == 0 || i + wc > count)
      return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                            "vulkan: the compiled SPIR-V has a malformed "
                            "instruction at word %zu",
                            i);
    if ((words[i] & 0xffff) == SPIRV_OP_ENTRY_POINT && wc >= 4) {
      size_t name_words = literal_words(words + i + 3, wc - 3);
      if (name_words && strcmp((const char *)(words + i + 3), from) == 0) {
        if (wc - name_words + to_words > 0xffff)
          return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                                "vulkan: the entry point name \"%.64s...\" "
                                "is too long for SPIR-V",
                                to);
        size = size - name_words + to_words;
        renamed++;
      }
    }
    i += wc;
  }
  if (renamed == 0)
    return kiln_set_error(KILN_ERROR_NOT_FOUND,
                          "vulkan: the compiled SPIR-V has no entry point "
                          "called \"%.*s\"",
                          (int)from_len, from);
  uint32_t *out = calloc(size, sizeof *out);
  if (!out)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "vulkan: no memory to rename the entry point");
  /* Second pass: copy, rewriting the entry points' names. */
  memcpy(out, words, 5 * sizeof *out);
  size_t o = 5;
  for (size_t i = 5; i < count;) {
    size_t wc = words[i] >> 16;
    size_t name_words = (words[i] & 0xffff) == SPIRV_OP_ENTRY_POINT && wc >= 4
                            ? literal_words(words + i + 3, wc - 3)
                            : 0;
    if (name_words && strcmp((const char *)(words + i + 3), from) == 0) {
      size_t interface = wc - 3 - name_words;
      size_t new_wc = 3 + to_words + interface;
      out[o] = (uint32_t)(new_wc << 16 | SPIRV_OP_ENTRY_POINT);
      out[o + 1] = words[i + 1];           /* execution model */
      out[o + 2] = words[i + 2];           /* the function */
      memcpy(out + o + 3, to, strlen(to)); /* zero-padded by calloc */
      memcpy(out + o + 3 + to_words, words + i + 3 + name_words,
             interface * sizeof *out);
      o += new_wc;
    } else {
      memcpy(out + o, words + i, wc * sizeof *out);
      o += wc;
    }
    i += wc;
  }
  *out_words = out;
  *out_count = size;
  return KILN_OK;
}

/* ---- Compiling ------------------------------------------------------------ */
