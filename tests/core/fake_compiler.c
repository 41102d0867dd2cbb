/* The fake backends' run-time compiler (see fake_compiler_enable). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_backend.h"

#define MAX_INCLUDE_DEPTH 8

/* The fake that compiles `language`: Vulkan takes GLSL, HIP takes HIP, and
 * CUDA C++ goes to the CUDA fake if there is one, else to HIP's. */
static fake_backend *fake_for(kiln_source_language language) {
  switch (language) {
  case KILN_SOURCE_GLSL: return fake_installed(KILN_BACKEND_VULKAN);
  case KILN_SOURCE_HIP: return fake_installed(KILN_BACKEND_HIP);
  case KILN_SOURCE_CUDA:
    return fake_installed(KILN_BACKEND_CUDA)
               ? fake_installed(KILN_BACKEND_CUDA)
               : fake_installed(KILN_BACKEND_HIP);
  }
  return NULL;
}

/* compiler_load has no context to tell its fake by; the tests that load a
 * compiler install one fake at a time. */
static fake_backend *any_fake(void) {
  for (int k = KILN_BACKEND_CUDA; k < KILN_BACKEND_COUNT; k++)
    if (fake_installed((kiln_backend)k)) return fake_installed((kiln_backend)k);
  return NULL;
}

static kiln_status compiler_load(char *description, size_t size) {
  fake_backend *fb = any_fake();
  if (!fb || !fb->compiler_available) {
    snprintf(description, size, "%s",
             fb ? fb->compiler_reason : "no fake is installed");
    return KILN_ERROR_UNAVAILABLE;
  }
  snprintf(description, size, "fakecc %s", fb->compiler_version);
  return KILN_OK;
}

static kiln_status compile_target(const kiln_context *ctx, char *target,
                                  size_t size) {
  snprintf(target, size, "fake_%s", ctx->properties.architecture);
  return KILN_OK;
}

typedef struct out_text {
  char *text, *log;
  size_t used, cap, log_used, log_cap;
} out_text;

static bool append(char **buf, size_t *used, size_t *cap, const char *s,
                   size_t n) {
  if (*used + n + 1 > *cap) {
    size_t grown = (*used + n + 1) * 2;
    char *p = realloc(*buf, grown);
    if (!p) return false;
    *buf = p;
    *cap = grown;
  }
  memcpy(*buf + *used, s, n);
  *used += n;
  (*buf)[*used] = '\0';
  return true;
}

static void log_line(out_text *o, const char *name, size_t line,
                     const char *kind, const char *text, size_t len) {
  char head[160];
  int n = snprintf(head, sizeof head, "%s:%zu: %s: ", name, line, kind);
  if (n > 0 && append(&o->log, &o->log_used, &o->log_cap, head, (size_t)n) &&
      append(&o->log, &o->log_used, &o->log_cap, text, len))
    append(&o->log, &o->log_used, &o->log_cap, "\n", 1);
}

static bool defined(const kiln_compile_options *o, const char *name,
                    size_t len) {
  for (size_t i = 0; i < o->define_count; i++) {
    const char *d = o->defines[i];
    if (strncmp(d, name, len) == 0 && (d[len] == '\0' || d[len] == '='))
      return true;
  }
  return false;
}

/* The text of header `name` (malloc'd), from memory or a directory. */
static char *find_header(const kiln_compile_options *o, const char *name) {
  for (size_t i = 0; i < o->header_count; i++)
    if (strcmp(o->headers[i].name, name) == 0) return strdup(o->headers[i].text);
  for (size_t i = 0; i < o->include_dir_count; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", o->include_dirs[i], name);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    char *text = calloc(1, 65536);
    if (text) {
      size_t n = fread(text, 1, 65535, f);
      text[n] = '\0';
    }
    fclose(f);
    return text;
  }
  return NULL;
}

/* Processes `text` (from file `name`) into o; false on an error. */
static bool process(const kiln_compile_job *job, const char *name,
                    const char *text, int depth, out_text *o) {
  bool skipping = false, ok = true;
  size_t line = 0;
  for (const char *p = text; ok && *p;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    line++;
    if (len >= 6 && strncmp(p, "#endif", 6) == 0) {
      skipping = false;
    } else if (skipping) {
      /* Inside an #ifdef whose name is not defined. */
    } else if (len > 7 && strncmp(p, "#ifdef ", 7) == 0) {
      skipping = !defined(job->options, p + 7, len - 7);
    } else if (len > 9 && strncmp(p, "#warning ", 9) == 0) {
      log_line(o, name, line, "warning", p + 9, len - 9);
    } else if (len > 7 && strncmp(p, "#error ", 7) == 0) {
      log_line(o, name, line, "error", p + 7, len - 7);
      ok = false;
    } else if (len > 11 && strncmp(p, "#include \"", 10) == 0 &&
               p[len - 1] == '"') {
      char header[256];
      snprintf(header, sizeof header, "%.*s", (int)(len - 11), p + 10);
      char *h = depth < MAX_INCLUDE_DEPTH ? find_header(job->options, header)
                                          : NULL;
      if (!h) {
        log_line(o, name, line, "error", "cannot find the header", 22);
        ok = false;
      } else {
        ok = process(job, header, h, depth + 1, o);
        free(h);
      }
    } else if (!append(&o->text, &o->used, &o->cap, p, len) ||
               !append(&o->text, &o->used, &o->cap, "\n", 1)) {
      ok = false;
    }
    p = end ? end + 1 : p + len;
  }
  return ok;
}

/* A name expression's lowered name, as a C++ compiler would mangle it:
 * "L_" and the expression with every character but letters and digits
 * made '_' ("axpy<float>" gives "L_axpy_float_"). A kernel of that name
 * joins the image, as an instantiation adds one. */
static kiln_status lower_names(const kiln_compile_job *job, out_text *o,
                               kiln_compiled *out) {
  const kiln_compile_options *opt = job->options;
  if (job->language == KILN_SOURCE_GLSL || !opt->name_expression_count)
    return KILN_OK;
  out->names = calloc(opt->name_expression_count, sizeof *out->names);
  if (!out->names) return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY, "fake");
  for (size_t i = 0; i < opt->name_expression_count; i++) {
    const char *e = opt->name_expressions[i];
    if (strchr(e, '!'))
      return kiln_set_error(KILN_ERROR_COMPILE,
                            "fakecc: no lowered name for \"%s\"", e);
    char *lowered = malloc(strlen(e) + 3);
    char *expression = strdup(e);
    if (!lowered || !expression) {
      free(lowered);
      free(expression);
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY, "fake");
    }
    size_t n = 0;
    lowered[n++] = 'L';
    lowered[n++] = '_';
    for (const char *p = e; *p; p++)
      lowered[n++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                             (*p >= '0' && *p <= '9')
                         ? *p
                         : '_';
    lowered[n] = '\0';
    out->names[out->name_count++] = (kiln_name_pair){expression, lowered};
    if (!append(&o->text, &o->used, &o->cap, lowered, n) ||
        !append(&o->text, &o->used, &o->cap, "\n", 1))
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY, "fake");
  }
  return KILN_OK;
}

static kiln_status compile(const kiln_compile_job *job, kiln_compiled *out) {
  fake_backend *fb = fake_for(job->language);
  if (!fb)
    return kiln_set_error(KILN_ERROR_BACKEND, "fake: no fake compiles %s",
                          kiln_source_language_name(job->language));
  atomic_fetch_add(&fb->compiles, 1);
  snprintf(fb->last_target, sizeof fb->last_target, "%s", job->target);
  const kiln_compile_options *opt = job->options;
  const char *const *raw = job->language == KILN_SOURCE_GLSL
                               ? opt->glsl_options
                           : job->language == KILN_SOURCE_HIP
                               ? opt->hip_options
                               : opt->cuda_options;
  size_t raw_count = job->language == KILN_SOURCE_GLSL ? opt->glsl_option_count
                     : job->language == KILN_SOURCE_HIP
                         ? opt->hip_option_count
                         : opt->cuda_option_count;
  for (size_t i = 0; i < raw_count; i++)
    if (strncmp(raw[i], "--bogus", 7) == 0)
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "fake: unknown option %s", raw[i]);
  out_text o = {0};
  bool ok = process(job, job->name, job->text, 0, &o);
  out->log = o.log;
  if (!ok) {
    free(o.text);
    return kiln_set_error(KILN_ERROR_COMPILE,
                          "fakecc could not compile %s for %s: %s", job->name,
                          job->target, o.log ? o.log : "out of memory");
  }
  kiln_status st = lower_names(job, &o, out);
  if (st != KILN_OK) {
    free(o.text);
    return st;
  }
  out->format = KILN_IMAGE_SPIRV;
  out->image = o.text ? o.text : strdup(" ");
  out->image_size = strlen(out->image);
  return KILN_OK;
}

/* One table per kind, which only the languages tell apart. */
static const kiln_compiler_ops cuda_compiler = {
    .languages = {KILN_SOURCE_CUDA, 0},
    .compiler_load = compiler_load,
    .compile_target = compile_target,
    .compile = compile,
};

static const kiln_compiler_ops hip_compiler = {
    .languages = {KILN_SOURCE_HIP, KILN_SOURCE_CUDA, 0},
    .compiler_load = compiler_load,
    .compile_target = compile_target,
    .compile = compile,
};

static void image_checks(const kiln_context *ctx, char *out, size_t size) {
  snprintf(out, size, "%s", fake_installed(ctx->ops->kind)->image_checks);
}

static const kiln_compiler_ops glsl_compiler = {
    .languages = {KILN_SOURCE_GLSL, 0},
    .compiler_load = compiler_load,
    .compile_target = compile_target,
    .compile = compile,
    .image_checks = image_checks,
};

void fake_compiler_enable(fake_backend *fb) {
  kiln_backend_ops *o = &fb->ops;
  switch (o->kind) {
  case KILN_BACKEND_CUDA: o->compiler = &cuda_compiler; break;
  case KILN_BACKEND_HIP: o->compiler = &hip_compiler; break;
  default: o->compiler = &glsl_compiler; break;
  }
  fb->compiler_available = true;
  snprintf(fb->compiler_reason, sizeof fb->compiler_reason,
           "libfakecc.so.1 could not be loaded (package fakecc-dev)");
  snprintf(fb->compiler_version, sizeof fb->compiler_version, "1.0");
  snprintf(fb->image_checks, sizeof fb->image_checks, "fake checks 1");
}
