/* The kernel corpus (tests/corpus/corpus.h) through the CUDA backend's
 * compiler alone: every source compiles with NVRTC for sm_90, with the
 * toolkit's headers kiln passes by default, its name expressions lowered;
 * broken.cu fails, naming its file and line. Needs NVRTC, not a GPU, so
 * CI runs it wherever the toolkit is (else it exits 77, saying why); the
 * conformance suite's corpus group runs the kernels on a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/cuda/cuda.h"
#include "tests/corpus/corpus.h"

static char *read_text(const char *file) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", KILN_CORPUS_DIR, file);
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open the corpus file %s", path);
  fseek(f, 0, SEEK_END);
  const long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)size + 1);
  assert_non_null(text);
  const size_t got = fread(text, 1, (size_t)size, f);
  fclose(f);
  text[got] = '\0';
  return text;
}

/* Compiles `file` for sm_90 with `names`; the status, and the log in
 * *log (malloc'd, may be NULL). */
static kiln_status compile(const char *file, const char *const *names,
                           size_t count, kiln_compiled *out) {
  char *text = read_text(file);
  kiln_compile_options o;
  memset(&o, 0, sizeof o);
  o.name_expressions = names;
  o.name_expression_count = count;
  const kiln_compile_job job = {.language = KILN_SOURCE_CUDA,
                                .name = file,
                                .text = text,
                                .entry_point = NULL,
                                .target = "sm_90",
                                .options = &o};
  memset(out, 0, sizeof *out);
  const kiln_status st = kiln_cuda_ops.compiler->compile(&job, out);
  free(text);
  return st;
}

static void release(kiln_compiled *c) {
  free(c->image);
  free(c->log);
  kiln_name_pairs_free(c->names, c->name_count);
  memset(c, 0, sizeof *c);
}

static void every_source_compiles(void **state) {
  (void)state;
  static const char *const templates[] = {KILN_CORPUS_TEMPLATE_NAMES};
  static const char *const namespaced[] = {KILN_CORPUS_NAMESPACED_NAMES};
  static const struct {
    const char *file;
  } files[] = {
#define CORPUS_FILE(file, kernel, toolkit) {file},
      KILN_CORPUS(CORPUS_FILE)
#undef CORPUS_FILE
  };
  size_t failures = 0;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    const char *file = files[i].file;
    const bool is_templates = strcmp(file, "templates.cu") == 0;
    const bool is_namespaced = strcmp(file, "namespaced.cu") == 0;
    const char *const *names =
        is_templates ? templates : is_namespaced ? namespaced : NULL;
    const size_t count = is_templates ? 2 : is_namespaced ? 1 : 0;
    kiln_compiled c;
    const kiln_status st = compile(file, names, count, &c);
    if (st != KILN_OK || !c.image_size || c.name_count != count) {
      failures++;
      print_message("%s: %s, %zu bytes, %zu lowered names; log:\n%s\n", file,
                    kiln_status_name(st), c.image_size, c.name_count,
                    c.log ? c.log : "");
    } else {
      print_message("%s: %zu bytes of %s%s%s\n", file, c.image_size,
                    kiln_image_format_name(c.format),
                    count ? ", first name lowered to " : "",
                    count ? c.names[0].lowered : "");
    }
    release(&c);
  }
  if (failures) fail_msg("%zu corpus source(s) did not compile", failures);
}

static void the_error_names_its_line(void **state) {
  (void)state;
  kiln_compiled c;
  assert_int_equal(compile("broken.cu", NULL, 0, &c), KILN_ERROR_COMPILE);
  assert_non_null(c.log);
  if (!strstr(c.log, KILN_CORPUS_BROKEN_AT))
    fail_msg("the log does not name %s: %s", KILN_CORPUS_BROKEN_AT, c.log);
  release(&c);
}

int main(void) {
  char description[1024];
  if (kiln_cuda_ops.compiler->compiler_load(description, sizeof description) !=
      KILN_OK) {
    printf("skipped: NVRTC cannot be loaded here: %s\n", description);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_source_compiles),
      cmocka_unit_test(the_error_names_its_line),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
