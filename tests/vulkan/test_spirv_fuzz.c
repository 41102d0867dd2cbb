/* Mutated SPIR-V images, as a fuzzer makes them: each must be rejected by
 * kiln_module_create with KILN_ERROR_INVALID_IMAGE and a message, or load
 * and then launch (or fail the launch, in words) without crashing the
 * process, and with the validation layer on (meson.build), without a
 * message from it. kiln's own checks are also run alone on every mutant
 * (kiln_vulkan_spirv_reflect, no device), so that under ASan they are seen
 * never to read outside the image.
 *
 * The mutants, 330 of them from a fixed seed: the three that once crashed
 * (cut short by one word, a huge id bound, a struct that contains itself),
 * then bounds, cuts, word counts, bit flips, random and small words,
 * swapped, removed and repeated instructions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/vulkan/vulkan.h"
#include "validation_log.h"

/* The image every mutant starts from, compiled by glslangValidator 12
 * (--target-env vulkan1.2 -V -e fuzz --source-entrypoint main) and
 * stripped by spirv-opt --strip-debug; kept here as words so that the
 * mutants stay the same whatever compiler builds kiln. Its source:
 *
 *   #version 460
 *   layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
 *   layout(constant_id = 3) const uint SHARED_BYTES = 4;
 *   layout(push_constant, std430) uniform Args {
 *     float a;
 *     uint b;
 *     int c;
 *   } args;
 *   shared uint tile[SHARED_BYTES / 4];
 *   shared float total;
 *   float scaled(float x) { return x * args.a + float(args.c); }
 *   void main() {
 *     if (gl_LocalInvocationIndex == 0u) total = scaled(float(args.b));
 *     barrier();
 *   }
 *
 * It indexes no array and reaches no buffer, so no mutant the validator
 * lets through can write outside its own memory (a kernel may always do
 * that: kiln cannot stop it, only the image's checks can keep such a
 * kernel from being made). */
static const uint32_t base[] = {
    0x07230203, 0x00010500, 0x0008000b, 0x0000003d, 0x00000000, 0x00020011,
    0x00000001, 0x0006000b, 0x00000001, 0x4c534c47, 0x6474732e, 0x3035342e,
    0x00000000, 0x0003000e, 0x00000000, 0x00000001, 0x0009000f, 0x00000005,
    0x00000004, 0x7a7a7566, 0x00000000, 0x00000011, 0x00000020, 0x00000028,
    0x0000003c, 0x00060010, 0x00000004, 0x00000011, 0x00000001, 0x00000001,
    0x00000001, 0x00050048, 0x0000000f, 0x00000000, 0x00000023, 0x00000000,
    0x00050048, 0x0000000f, 0x00000001, 0x00000023, 0x00000004, 0x00050048,
    0x0000000f, 0x00000002, 0x00000023, 0x00000008, 0x00030047, 0x0000000f,
    0x00000002, 0x00040047, 0x00000020, 0x0000000b, 0x0000001d, 0x00040047,
    0x00000032, 0x00000001, 0x00000000, 0x00040047, 0x00000033, 0x00000001,
    0x00000001, 0x00040047, 0x00000034, 0x00000001, 0x00000002, 0x00040047,
    0x00000036, 0x0000000b, 0x00000019, 0x00040047, 0x00000037, 0x00000001,
    0x00000003, 0x00020013, 0x00000002, 0x00030021, 0x00000003, 0x00000002,
    0x00030016, 0x00000006, 0x00000020, 0x00040020, 0x00000007, 0x00000007,
    0x00000006, 0x00040021, 0x00000008, 0x00000006, 0x00000007, 0x00040015,
    0x0000000d, 0x00000020, 0x00000000, 0x00040015, 0x0000000e, 0x00000020,
    0x00000001, 0x0005001e, 0x0000000f, 0x00000006, 0x0000000d, 0x0000000e,
    0x00040020, 0x00000010, 0x00000009, 0x0000000f, 0x0004003b, 0x00000010,
    0x00000011, 0x00000009, 0x0004002b, 0x0000000e, 0x00000012, 0x00000000,
    0x00040020, 0x00000013, 0x00000009, 0x00000006, 0x0004002b, 0x0000000e,
    0x00000017, 0x00000002, 0x00040020, 0x00000018, 0x00000009, 0x0000000e,
    0x00040020, 0x0000001f, 0x00000001, 0x0000000d, 0x0004003b, 0x0000001f,
    0x00000020, 0x00000001, 0x0004002b, 0x0000000d, 0x00000022, 0x00000000,
    0x00020014, 0x00000023, 0x00040020, 0x00000027, 0x00000004, 0x00000006,
    0x0004003b, 0x00000027, 0x00000028, 0x00000004, 0x0004002b, 0x0000000e,
    0x00000029, 0x00000001, 0x00040020, 0x0000002a, 0x00000009, 0x0000000d,
    0x0004002b, 0x0000000d, 0x00000030, 0x00000002, 0x0004002b, 0x0000000d,
    0x00000031, 0x00000108, 0x00040032, 0x0000000d, 0x00000032, 0x00000001,
    0x00040032, 0x0000000d, 0x00000033, 0x00000001, 0x00040032, 0x0000000d,
    0x00000034, 0x00000001, 0x00040017, 0x00000035, 0x0000000d, 0x00000003,
    0x00060033, 0x00000035, 0x00000036, 0x00000032, 0x00000033, 0x00000034,
    0x00040032, 0x0000000d, 0x00000037, 0x00000004, 0x0004002b, 0x0000000d,
    0x00000038, 0x00000004, 0x00060034, 0x0000000d, 0x00000039, 0x00000086,
    0x00000037, 0x00000038, 0x0004001c, 0x0000003a, 0x0000000d, 0x00000039,
    0x00040020, 0x0000003b, 0x00000004, 0x0000003a, 0x0004003b, 0x0000003b,
    0x0000003c, 0x00000004, 0x00050036, 0x00000002, 0x00000004, 0x00000000,
    0x00000003, 0x000200f8, 0x00000005, 0x0004003b, 0x00000007, 0x0000002e,
    0x00000007, 0x0004003d, 0x0000000d, 0x00000021, 0x00000020, 0x000500aa,
    0x00000023, 0x00000024, 0x00000021, 0x00000022, 0x000300f7, 0x00000026,
    0x00000000, 0x000400fa, 0x00000024, 0x00000025, 0x00000026, 0x000200f8,
    0x00000025, 0x00050041, 0x0000002a, 0x0000002b, 0x00000011, 0x00000029,
    0x0004003d, 0x0000000d, 0x0000002c, 0x0000002b, 0x00040070, 0x00000006,
    0x0000002d, 0x0000002c, 0x0003003e, 0x0000002e, 0x0000002d, 0x00050039,
    0x00000006, 0x0000002f, 0x0000000a, 0x0000002e, 0x0003003e, 0x00000028,
    0x0000002f, 0x000200f9, 0x00000026, 0x000200f8, 0x00000026, 0x000400e0,
    0x00000030, 0x00000030, 0x00000031, 0x000100fd, 0x00010038, 0x00050036,
    0x00000006, 0x0000000a, 0x00000000, 0x00000008, 0x00030037, 0x00000007,
    0x00000009, 0x000200f8, 0x0000000b, 0x0004003d, 0x00000006, 0x0000000c,
    0x00000009, 0x00050041, 0x00000013, 0x00000014, 0x00000011, 0x00000012,
    0x0004003d, 0x00000006, 0x00000015, 0x00000014, 0x00050085, 0x00000006,
    0x00000016, 0x0000000c, 0x00000015, 0x00050041, 0x00000018, 0x00000019,
    0x00000011, 0x00000017, 0x0004003d, 0x0000000e, 0x0000001a, 0x00000019,
    0x0004006f, 0x00000006, 0x0000001b, 0x0000001a, 0x00050081, 0x00000006,
    0x0000001c, 0x00000016, 0x0000001b, 0x000200fe, 0x0000001c, 0x00010038,
};

#define BASE_WORDS (sizeof base / sizeof base[0])
#define MUTANTS 3000

enum {
  OP_CAPABILITY = 17,
  OP_TYPE_STRUCT = 30,
  CAPABILITY_INT64 = 11,
};

static kiln_context *ctx;
/* Why the launches were not tried, or NULL. */
static const char *partial;

/* splitmix64: the same mutants on every machine. */
static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint32_t below(uint64_t *s, uint32_t n) {
  return (uint32_t)(next(s) % n);
}

/* Where each instruction of the base image starts. */
static uint32_t starts[BASE_WORDS];
static uint32_t instructions;

static void find_instructions(void) {
  for (uint32_t at = 5; at < BASE_WORDS; at += base[at] >> 16)
    starts[instructions++] = at;
}

static uint32_t find_op(uint32_t op) {
  for (uint32_t i = 0; i < instructions; i++)
    if ((base[starts[i]] & 0xffffu) == op) return starts[i];
  fail_msg("the base image has no instruction %u", op);
  return 0;
}

typedef struct mutant {
  uint32_t w[BASE_WORDS * 2];
  size_t count; /* words */
  char what[96];
  bool must_fail; /* one of the images that once crashed kiln */
} mutant;

/* Removes instruction i (by = -1) or repeats it (by = 1). */
static void resize_instruction(mutant *m, uint32_t i, int by) {
  uint32_t at = starts[i], n = base[at] >> 16;
  memcpy(m->w, base, at * 4);
  if (by > 0) {
    memcpy(m->w + at, base + at, n * 4);
    memcpy(m->w + at + n, base + at, (BASE_WORDS - at) * 4);
    m->count = BASE_WORDS + n;
  } else {
    memcpy(m->w + at, base + at + n, (BASE_WORDS - at - n) * 4);
    m->count = BASE_WORDS - n;
  }
}

static void make_mutant(int index, uint64_t *s, mutant *m) {
  memcpy(m->w, base, sizeof base);
  m->count = BASE_WORDS;
  m->must_fail = index < 3;
  uint32_t bound = base[3];
  switch (index < 3 ? index : 3 + (int)below(s, 9)) {
  case 0:
    m->count--;
    snprintf(m->what, sizeof m->what, "cut short by one word");
    return;
  case 1:
    m->w[3] = 0x3fffff;
    snprintf(m->what, sizeof m->what, "id bound 0x3fffff");
    return;
  case 2: {
    uint32_t at = find_op(OP_TYPE_STRUCT);
    m->w[at + 2] = m->w[at + 1];
    snprintf(m->what, sizeof m->what, "a struct containing itself");
    return;
  }
  case 3: {
    static const uint32_t bounds[] = {0, 1, 2, 40, 60, 62, 0x400000,
                                      0xffffffffu, 5000};
    m->w[3] = bounds[below(s, sizeof bounds / sizeof bounds[0])];
    snprintf(m->what, sizeof m->what, "id bound %u (was %u)", m->w[3], bound);
    return;
  }
  case 4: {
    uint32_t cut = 1 + below(s, BASE_WORDS - 1);
    m->count = BASE_WORDS - cut;
    snprintf(m->what, sizeof m->what, "cut short by %u words", cut);
    return;
  }
  case 5: {
    uint32_t at = starts[below(s, instructions)];
    uint32_t counts[] = {0, 1, 2, (base[at] >> 16) + 1, 0xffff};
    uint32_t n = counts[below(s, 5)];
    m->w[at] = (n << 16) | (base[at] & 0xffffu);
    snprintf(m->what, sizeof m->what, "word count %u at word %u", n, at);
    return;
  }
  case 6: {
    uint32_t i = below(s, instructions);
    bool repeat = below(s, 2);
    resize_instruction(m, i, repeat ? 1 : -1);
    snprintf(m->what, sizeof m->what, "instruction at word %u %s",
             starts[i], repeat ? "repeated" : "removed");
    return;
  }
  default: {
    /* One to three words changed: bits flipped, a random word, a small
     * word (an id, an opcode, a count), or two words swapped. */
    int changes = 1 + (int)below(s, 3), len = 0;
    for (int c = 0; c < changes; c++) {
      uint32_t at = below(s, BASE_WORDS), old = m->w[at];
      switch (below(s, 4)) {
      case 0: m->w[at] ^= 1u << below(s, 32); break;
      case 1: m->w[at] = (uint32_t)next(s); break;
      case 2: m->w[at] = below(s, bound + 3); break;
      default: {
        uint32_t other = below(s, BASE_WORDS);
        m->w[at] = m->w[other];
        m->w[other] = old;
        break;
      }
      }
      len += snprintf(m->what + len, sizeof m->what - (size_t)len,
                      "%sword %u 0x%08x -> 0x%08x", c ? ", " : "", at, old,
                      m->w[at]);
      if (len >= (int)sizeof m->what) break;
    }
    return;
  }
  }
}

/* kiln's own checks alone: a clean answer, never a read outside. */
static void own_checks(const mutant *m, kiln_vulkan_spirv_info *info) {
  kiln_status st = kiln_vulkan_spirv_reflect(m->w, m->count * 4, 0, info);
  if (st != KILN_OK && st != KILN_ERROR_INVALID_IMAGE)
    fail_msg("%s: kiln's checks said %s: %s", m->what, kiln_status_name(st),
             kiln_last_error());
  if (st != KILN_OK && !strstr(kiln_last_error(), "SPIR-V image 0"))
    fail_msg("%s: the message \"%s\" does not name the image", m->what,
             kiln_last_error());
  if (m->must_fail && st == KILN_OK)
    fail_msg("%s: kiln's own checks let it through", m->what);
}

typedef struct tally {
  int rejected, no_kernel, launched, launch_failed;
} tally;

/* Through the API: rejected at load, or loaded and launched. */
static void load_and_launch(const mutant *m, const kiln_vulkan_spirv_info *info,
                            tally *t) {
  kiln_module_image image = {KILN_IMAGE_SPIRV, m->w, m->count * 4};
  kiln_module *mod;
  kiln_status st = kiln_module_create(ctx, &image, 1, &mod);
  if (st != KILN_OK) {
    if (st != KILN_ERROR_INVALID_IMAGE || !kiln_last_error()[0])
      fail_msg("%s: kiln_module_create said %s: \"%s\"", m->what,
               kiln_status_name(st), kiln_last_error());
    t->rejected++;
    return;
  }
  if (m->must_fail) fail_msg("%s: the image loaded", m->what);
  kiln_kernel *k;
  st = kiln_module_get_kernel(mod, "fuzz", &k);
  if (st != KILN_OK) {
    if ((st != KILN_ERROR_NOT_FOUND && st != KILN_ERROR_INVALID_IMAGE &&
         st != KILN_ERROR_UNSUPPORTED) ||
        !kiln_last_error()[0])
      fail_msg("%s: kiln_module_get_kernel said %s: \"%s\"", m->what,
               kiln_status_name(st), kiln_last_error());
    t->no_kernel++;
  } else {
    /* As its author would launch it: with shared memory where the kernel
     * sizes an array by constant 3. */
    kiln_launch_config c = {{1, 1, 1}, {1, 1, 1},
                            info->shared_root_count ? 4 : 0};
    kiln_arg args[3] = {kiln_arg_f32(1.5f), kiln_arg_u32(2),
                        kiln_arg_i32(-3)};
    st = kiln_launch(NULL, k, &c, args, 3);
    if (st == KILN_OK) st = kiln_context_synchronize(ctx);
    if (st == KILN_OK) {
      t->launched++;
    } else {
      if (!kiln_last_error()[0])
        fail_msg("%s: the launch said %s without a message", m->what,
                 kiln_status_name(st));
      t->launch_failed++;
    }
  }
  st = kiln_module_destroy(mod);
  if (st != KILN_OK)
    fail_msg("%s: kiln_module_destroy: %s", m->what, kiln_last_error());
}

/* Whether SPIRV-Tools' validator runs, and refuses what kiln's own checks
 * let through: an image that declares Int64 where it should declare Shader
 * is well formed, but its GLCompute entry point needs Shader. */
static bool validator_runs(void) {
  if (!kiln_vulkan_spirv_validator_loads()) return false;
  mutant m;
  memcpy(m.w, base, sizeof base);
  m.count = BASE_WORDS;
  m.w[find_op(OP_CAPABILITY) + 1] = CAPABILITY_INT64;
  kiln_module_image image = {KILN_IMAGE_SPIRV, m.w, m.count * 4};
  kiln_module *mod;
  kiln_status st = kiln_module_create(ctx, &image, 1, &mod);
  if (st == KILN_OK) kiln_module_destroy(mod);
  assert_int_equal(st, KILN_ERROR_INVALID_IMAGE);
  assert_non_null(strstr(kiln_last_error(), "invalid for Vulkan 1.2"));
  return true;
}

static void mutants(void **state) {
  (void)state;
  find_instructions();
  const char *reason = NULL;
  bool device = kiln_backend_available(KILN_BACKEND_VULKAN, &reason) == KILN_OK;
  if (device) {
    kiln_context_options o = kiln_context_options_default();
    o.backend = KILN_BACKEND_VULKAN;
    if (kiln_context_create(&o, &ctx) != KILN_OK)
      fail_msg("kiln_context_create: %s", kiln_last_error());
  }
  bool validated = device && validator_runs();
  /* Without the validator a driver would be handed mutants that only
   * SPIRV-Tools can tell are invalid, and may crash on them. */
  if (!device)
    partial = "no Vulkan device";
  else if (!validated)
    partial = "no SPIRV-Tools validator loads (libSPIRV-Tools-shared.so "
              "from spirv-tools, or kiln's own libkiln-shaderc.so)";
  if (partial) printf("  %s: kiln's own checks only, no launches\n", partial);
  uint64_t seed = getenv("SEED") ? strtoull(getenv("SEED"), 0, 0) : 1;
  tally t = {0, 0, 0, 0};
  int own_rejected = 0;
  mutant *m = malloc(sizeof *m);
  assert_non_null(m);
  for (int i = 0; i < MUTANTS; i++) {
    make_mutant(i, &seed, m);
    kiln_vulkan_spirv_info info;
    own_checks(m, &info);
    if (!info.entry_points) own_rejected++;
    if (getenv("TRACE")) fprintf(stderr, "mutant %d: %s\n", i, m->what);
    if (validated) load_and_launch(m, &info, &t);
    kiln_vulkan_spirv_free(&info);
  }
  free(m);
  printf("  %d mutants: %d rejected by kiln's own checks", MUTANTS,
         own_rejected);
  if (validated)
    printf("; through the API %d rejected at load, %d without a kernel, %d "
           "launched, %d launches failed in words",
           t.rejected, t.no_kernel, t.launched, t.launch_failed);
  printf("\n");
  if (ctx) assert_int_equal(kiln_context_destroy(ctx), KILN_OK);
  assert_int_equal(vk_test_validation_messages, 0);
  /* A test that rejects or runs everything proves little. */
  assert_true(own_rejected > 0 && own_rejected < MUTANTS);
  if (validated) assert_true(t.rejected > 0 && t.launched > 0);
}

int main(void) {
  kiln_set_log_handler(vk_test_on_log, NULL);
  if (kiln_get_log_level() < KILN_LOG_ERROR) kiln_set_log_level(KILN_LOG_ERROR);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mutants),
  };
  int failed =
      cmocka_run_group_tests_name("vulkan-spirv-fuzz", tests, NULL, NULL);
  if (failed) return 1;
  if (partial) {
    fprintf(stderr, "skipped in part: %s\n", partial);
    return 77;
  }
  return 0;
}
