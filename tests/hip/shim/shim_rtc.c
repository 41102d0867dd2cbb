/* The shim's HIPRTC: HIP's run-time compiler as NVRTC, opened on first use,
 * so that the HIP backend's kernels from source run on an NVIDIA GPU too.
 * HIP's options are translated to NVRTC's, the target becomes the CUBIN of
 * an sm_XY architecture that the shim's hipModuleLoadData loads, and
 * <hip/hip_runtime.h>, which HIPRTC provides by itself, is supplied as an
 * in-memory header. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/hip/shim/shim.h"
#include "tests/hip/shim/shim_rtc.h"

/* nvrtc.h's types, declared here because the shim's build needs only
 * cuda.h (rtc_api_check.c holds them against nvrtc.h). */
#define SHIM_NVRTC_ENUMERATOR(name, value) name = value,
typedef enum nvrtcResult {
  SHIM_NVRTC_RESULTS(SHIM_NVRTC_ENUMERATOR)
} nvrtcResult;
#undef SHIM_NVRTC_ENUMERATOR
typedef struct _nvrtcProgram *nvrtcProgram;

#define SHIM_DECLARE(ret, name, params) SHIM_EXPORT ret name params;
SHIM_HIPRTC_SYMBOLS(SHIM_DECLARE)
#undef SHIM_DECLARE

static struct {
#define SHIM_X(ret, name, params) ret(*name) params;
  SHIM_NVRTC_SYMBOLS(SHIM_X)
#undef SHIM_X
} nv;

static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;
static bool nvrtc_loaded;
/* hiprtcGetErrorString's text for HIPRTC_ERROR_INTERNAL_ERROR when NVRTC
 * could not be loaded. */
static char nvrtc_error[768];

struct _hiprtcProgram {
  nvrtcProgram nvrtc;
  /* The last compile's log: the shim's own notes, then NVRTC's. */
  char *log;
  bool compiled; /* the last compile succeeded */
};

/* What HIPRTC compiles with no #include: on NVIDIA the CUDA builtins
 * (threadIdx, __syncthreads, ...) are NVRTC's own, so only HIP's names for
 * them are added. */
static const char hip_runtime_h[] =
    "#ifndef KILN_SHIM_HIP_RUNTIME_H\n"
    "#define KILN_SHIM_HIP_RUNTIME_H\n"
    "#ifndef __HIP_PLATFORM_NVIDIA__\n"
    "#define __HIP_PLATFORM_NVIDIA__ 1\n"
    "#endif\n"
    "#define hipThreadIdx_x threadIdx.x\n"
    "#define hipThreadIdx_y threadIdx.y\n"
    "#define hipThreadIdx_z threadIdx.z\n"
    "#define hipBlockIdx_x blockIdx.x\n"
    "#define hipBlockIdx_y blockIdx.y\n"
    "#define hipBlockIdx_z blockIdx.z\n"
    "#define hipBlockDim_x blockDim.x\n"
    "#define hipBlockDim_y blockDim.y\n"
    "#define hipBlockDim_z blockDim.z\n"
    "#define hipGridDim_x gridDim.x\n"
    "#define hipGridDim_y gridDim.y\n"
    "#define hipGridDim_z gridDim.z\n"
    "#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];\n"
    "#define HIP_KERNEL_NAME(...) __VA_ARGS__\n"
    "#endif\n";
static const char hip_runtime_name[] = "hip/hip_runtime.h";

static void load_nvrtc(void) {
  const char *chosen = getenv("KILN_SHIM_NVRTC_LIBRARY");
  static const char *const names[] = {
      "libnvrtc.so.13", "libnvrtc.so.12",
      "/usr/local/cuda/lib64/libnvrtc.so.13",
      "/usr/local/cuda/lib64/libnvrtc.so.12"};
  void *lib = NULL;
  const char *name = NULL;
  char why[512] = "";
  if (chosen && chosen[0]) {
    name = chosen;
    lib = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *e = dlerror();
      snprintf(why, sizeof why, "KILN_SHIM_NVRTC_LIBRARY names %s: %s",
               chosen, e ? e : "it cannot be opened");
    }
  } else {
    /* The first failure says most: the newest soname's. */
    char first[256] = "";
    for (size_t i = 0; !lib && i < sizeof names / sizeof names[0]; i++) {
      name = names[i];
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      const char *e = lib ? NULL : dlerror();
      if (i == 0 && e) snprintf(first, sizeof first, "%s", e);
    }
    if (!lib)
      snprintf(why, sizeof why,
               "neither libnvrtc.so.13 nor libnvrtc.so.12 is installed (%s)",
               first);
  }
  void *fn = NULL;
#define SHIM_X(ret, sym, params)                                      \
  if (lib && !why[0]) {                                               \
    fn = dlsym(lib, #sym);                                            \
    if (fn)                                                           \
      memcpy(&nv.sym, &fn, sizeof nv.sym);                            \
    else                                                              \
      snprintf(why, sizeof why, "%s lacks %s: NVRTC 11.1 or later is "  \
               "needed", name, #sym);                                 \
  }
  SHIM_NVRTC_SYMBOLS(SHIM_X)
#undef SHIM_X
  if (why[0]) {
    if (lib) dlclose(lib);
    snprintf(nvrtc_error, sizeof nvrtc_error,
             "HIPRTC_ERROR_INTERNAL_ERROR (kiln's HIP-on-CUDA test shim: "
             "NVRTC could not be loaded: %s)",
             why);
    return;
  }
  nvrtc_loaded = true;
}

static hiprtcResult nvrtc_ready(void) {
  pthread_once(&nvrtc_once, load_nvrtc);
  return nvrtc_loaded ? HIPRTC_SUCCESS : HIPRTC_ERROR_INTERNAL_ERROR;
}

/* The two enumerations agree on every code HIPRTC has; NVRTC's newer ones
 * (a failed time-trace write, a cancelled compile) are internal errors to
 * a HIP caller. */
static hiprtcResult from_nvrtc(nvrtcResult r) {
  switch (r) {
  case NVRTC_SUCCESS: return HIPRTC_SUCCESS;
  case NVRTC_ERROR_OUT_OF_MEMORY: return HIPRTC_ERROR_OUT_OF_MEMORY;
  case NVRTC_ERROR_PROGRAM_CREATION_FAILURE:
    return HIPRTC_ERROR_PROGRAM_CREATION_FAILURE;
  case NVRTC_ERROR_INVALID_INPUT: return HIPRTC_ERROR_INVALID_INPUT;
  case NVRTC_ERROR_INVALID_PROGRAM: return HIPRTC_ERROR_INVALID_PROGRAM;
  case NVRTC_ERROR_INVALID_OPTION: return HIPRTC_ERROR_INVALID_OPTION;
  case NVRTC_ERROR_COMPILATION: return HIPRTC_ERROR_COMPILATION;
  case NVRTC_ERROR_BUILTIN_OPERATION_FAILURE:
    return HIPRTC_ERROR_BUILTIN_OPERATION_FAILURE;
  case NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION:
    return HIPRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION;
  case NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION:
    return HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION;
  case NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID:
    return HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID;
  default: return HIPRTC_ERROR_INTERNAL_ERROR;
  }
}

/* ROCm's texts: the code's name, and this for a code it does not have. */
const char *hiprtcGetErrorString(hiprtcResult result) {
  if (result == HIPRTC_ERROR_INTERNAL_ERROR &&
      nvrtc_ready() != HIPRTC_SUCCESS)
    return nvrtc_error;
  switch (result) {
#define SHIM_NAME(name, value) \
  case name: return #name;
    SHIM_HIPRTC_RESULTS(SHIM_NAME)
#undef SHIM_NAME
  }
  return "Invalid HIPRTC error code";
}

/* NVRTC's version: the compiler that actually runs. */
hiprtcResult hiprtcVersion(int *major, int *minor) {
  if (!major || !minor) return HIPRTC_ERROR_INVALID_INPUT;
  hiprtcResult r = nvrtc_ready();
  if (r != HIPRTC_SUCCESS) return r;
  return from_nvrtc(nv.nvrtcVersion(major, minor));
}

/* The caller's headers, and hip/hip_runtime.h unless the caller has one. */
hiprtcResult hiprtcCreateProgram(hiprtcProgram *prog, const char *src,
                                 const char *name, int numHeaders,
                                 const char **headers,
                                 const char **includeNames) {
  if (!prog) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (!src || numHeaders < 0 ||
      (numHeaders > 0 && (!headers || !includeNames)))
    return HIPRTC_ERROR_INVALID_INPUT;
  hiprtcResult r = nvrtc_ready();
  if (r != HIPRTC_SUCCESS) return r;
  size_t count = (size_t)numHeaders;
  bool has_runtime = false;
  for (size_t i = 0; i < count; i++)
    if (includeNames[i] && strcmp(includeNames[i], hip_runtime_name) == 0)
      has_runtime = true;
  const char **texts = calloc(count + 1, sizeof *texts);
  const char **names = calloc(count + 1, sizeof *names);
  struct _hiprtcProgram *p = calloc(1, sizeof *p);
  if (!texts || !names || !p) {
    r = HIPRTC_ERROR_OUT_OF_MEMORY;
  } else {
    for (size_t i = 0; i < count; i++) {
      texts[i] = headers[i];
      names[i] = includeNames[i];
    }
    if (!has_runtime) {
      texts[count] = hip_runtime_h;
      names[count] = hip_runtime_name;
      count++;
    }
    /* NVRTC copies the texts and names. */
    r = from_nvrtc(
        nv.nvrtcCreateProgram(&p->nvrtc, src, name, (int)count, texts, names));
  }
  free(texts);
  free(names);
  if (r != HIPRTC_SUCCESS) {
    free(p);
    return r;
  }
  *prog = p;
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcDestroyProgram(hiprtcProgram *prog) {
  if (!prog || !*prog) return HIPRTC_ERROR_INVALID_PROGRAM;
  struct _hiprtcProgram *p = *prog;
  hiprtcResult r = from_nvrtc(nv.nvrtcDestroyProgram(&p->nvrtc));
  free(p->log);
  free(p);
  *prog = NULL;
  return r;
}

/* "-arch=sm_XY" of the thread's current device, or false with why not. */
static bool device_arch(char *out, size_t size, char *why, size_t why_size) {
  int device = 0, major = 0, minor = 0;
  hipError_t err = hipGetDevice(&device);
  if (err == hipSuccess)
    err = hipDeviceGetAttribute(
        &major, hipDeviceAttributeComputeCapabilityMajor, device);
  if (err == hipSuccess)
    err = hipDeviceGetAttribute(
        &minor, hipDeviceAttributeComputeCapabilityMinor, device);
  if (err != hipSuccess) {
    snprintf(why, why_size, "%s", hipGetErrorString(err));
    return false;
  }
  snprintf(out, size, "-arch=sm_%d%d", major, minor);
  return true;
}

/* The options as NVRTC's, into `out` (which holds as many as `in` plus
 * one); `arch` is the storage of a rewritten architecture. HIPRTC_SUCCESS,
 * or the error with the reason in `note`. */
static hiprtcResult translate(int count, const char **in, const char **out,
                              int *out_count, char *arch, size_t arch_size,
                              char *note, size_t note_size) {
  static const char *const arch_flags[] = {"--offload-arch=",
                                           "--gpu-architecture=", "-arch="};
  /* NVRTC optimises fully by default and takes no -O. */
  static const char *const optimise[] = {"-O", "-O1", "-O2", "-O3", "-Os",
                                         "-Oz"};
  bool has_arch = false;
  int n = 0;
  for (int i = 0; i < count; i++) {
    const char *o = in[i];
    if (!o) return HIPRTC_ERROR_INVALID_INPUT;
    bool dropped = false;
    for (size_t f = 0; f < sizeof optimise / sizeof *optimise; f++)
      if (strcmp(o, optimise[f]) == 0) dropped = true;
    if (dropped) continue;
    const char *target = NULL;
    for (size_t f = 0; !target && f < sizeof arch_flags / sizeof *arch_flags;
         f++)
      if (strncmp(o, arch_flags[f], strlen(arch_flags[f])) == 0)
        target = o + strlen(arch_flags[f]);
    if (target) {
      /* One architecture per NVRTC compile, and one buffer for it. */
      if (has_arch) {
        snprintf(note, note_size,
                 "kiln's HIP-on-CUDA test shim: %s: NVRTC compiles for one "
                 "architecture at a time\n",
                 o);
        return HIPRTC_ERROR_INVALID_OPTION;
      }
      has_arch = true;
      if (strncmp(target, "sm_", 3) == 0 ||
          strncmp(target, "compute_", 8) == 0) {
        snprintf(arch, arch_size, "-arch=%s", target);
      } else {
        /* A gfx name: the device the shim runs on is an NVIDIA one. */
        char why[512];
        if (!device_arch(arch, arch_size, why, sizeof why)) {
          snprintf(note, note_size,
                   "kiln's HIP-on-CUDA test shim: %s: no CUDA device to "
                   "compile for instead: %s\n",
                   o, why);
          return HIPRTC_ERROR_INVALID_OPTION;
        }
        snprintf(note, note_size,
                 "kiln's HIP-on-CUDA test shim: %s compiled as %s, the "
                 "current CUDA device's\n",
                 o, arch);
      }
      out[n++] = arch;
    } else if (strcmp(o, "-O0") == 0) {
      /* NVRTC has no switch for unoptimised code without debug
       * information; only -G turns off both NVVM's and ptxas's
       * optimisations (--dopt takes only "on", and -Xptxas -O0 leaves
       * NVVM's on). The debug information changes nothing else. */
      out[n++] = "-G";
    } else if (strcmp(o, "-ffast-math") == 0) {
      out[n++] = "--use_fast_math";
    } else {
      out[n++] = o;
    }
  }
  /* HIPRTC compiles for the current device by default. Without one,
   * NVRTC's default virtual architecture gives PTX only, which
   * hiprtcGetCode then returns. */
  char why[512];
  if (!has_arch && device_arch(arch, arch_size, why, sizeof why))
    out[n++] = arch;
  *out_count = n;
  return HIPRTC_SUCCESS;
}

/* The log of the compile just run: `note`, then NVRTC's when it ran. */
static hiprtcResult keep_log(struct _hiprtcProgram *p, const char *note,
                             bool ran) {
  size_t nvrtc_size = 1;
  if (ran && nv.nvrtcGetProgramLogSize(p->nvrtc, &nvrtc_size) != NVRTC_SUCCESS)
    nvrtc_size = 1;
  if (nvrtc_size == 0) nvrtc_size = 1;
  size_t note_len = strlen(note);
  char *log = malloc(note_len + nvrtc_size);
  if (!log) return HIPRTC_ERROR_OUT_OF_MEMORY;
  memcpy(log, note, note_len);
  log[note_len] = '\0';
  if (ran && nvrtc_size > 1 &&
      nv.nvrtcGetProgramLog(p->nvrtc, log + note_len) != NVRTC_SUCCESS)
    log[note_len] = '\0';
  p->log = log;
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcCompileProgram(hiprtcProgram prog, int numOptions,
                                  const char **options) {
  if (!prog) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (numOptions < 0 || (numOptions > 0 && !options))
    return HIPRTC_ERROR_INVALID_INPUT;
  free(prog->log);
  prog->log = NULL;
  prog->compiled = false;
  const char **translated = calloc((size_t)numOptions + 1, sizeof *translated);
  if (!translated) return HIPRTC_ERROR_OUT_OF_MEMORY;
  char arch[64] = "", note[1024] = "";
  int count = 0;
  hiprtcResult r = translate(numOptions, options, translated, &count, arch,
                             sizeof arch, note, sizeof note);
  bool ran = r == HIPRTC_SUCCESS;
  if (ran)
    r = from_nvrtc(nv.nvrtcCompileProgram(prog->nvrtc, count, translated));
  free(translated);
  hiprtcResult logged = keep_log(prog, note, ran);
  if (r == HIPRTC_SUCCESS) r = logged;
  prog->compiled = r == HIPRTC_SUCCESS;
  return r;
}

hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram prog, size_t *logSizeRet) {
  if (!prog) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (!logSizeRet) return HIPRTC_ERROR_INVALID_INPUT;
  *logSizeRet = prog->log ? strlen(prog->log) + 1 : 1;
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcGetProgramLog(hiprtcProgram prog, char *log) {
  if (!prog) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (!log) return HIPRTC_ERROR_INVALID_INPUT;
  const char *text = prog->log ? prog->log : "";
  memcpy(log, text, strlen(text) + 1);
  return HIPRTC_SUCCESS;
}

/* The CUBIN, or the PTX (NUL-terminated, as cuModuleLoadData takes it)
 * when the target was a virtual architecture. */
static hiprtcResult code_size(hiprtcProgram prog, bool *cubin, size_t *size) {
  if (!prog->compiled) return HIPRTC_ERROR_INVALID_PROGRAM;
  *cubin = nv.nvrtcGetCUBINSize(prog->nvrtc, size) == NVRTC_SUCCESS &&
           *size > 0;
  if (*cubin) return HIPRTC_SUCCESS;
  return from_nvrtc(nv.nvrtcGetPTXSize(prog->nvrtc, size));
}

hiprtcResult hiprtcGetCodeSize(hiprtcProgram prog, size_t *codeSizeRet) {
  if (!prog) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (!codeSizeRet) return HIPRTC_ERROR_INVALID_INPUT;
  bool cubin;
  return code_size(prog, &cubin, codeSizeRet);
}

hiprtcResult hiprtcAddNameExpression(hiprtcProgram prog,
                                     const char *name_expression) {
  if (!prog) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (!name_expression) return HIPRTC_ERROR_INVALID_INPUT;
  return from_nvrtc(nv.nvrtcAddNameExpression(prog->nvrtc, name_expression));
}

hiprtcResult hiprtcGetLoweredName(hiprtcProgram prog,
                                  const char *name_expression,
                                  const char **lowered_name) {
  if (!prog) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (!name_expression || !lowered_name) return HIPRTC_ERROR_INVALID_INPUT;
  return from_nvrtc(
      nv.nvrtcGetLoweredName(prog->nvrtc, name_expression, lowered_name));
}

hiprtcResult hiprtcGetCode(hiprtcProgram prog, char *code) {
  if (!prog) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (!code) return HIPRTC_ERROR_INVALID_INPUT;
  bool cubin;
  size_t size;
  hiprtcResult r = code_size(prog, &cubin, &size);
  if (r != HIPRTC_SUCCESS) return r;
  return from_nvrtc(cubin ? nv.nvrtcGetCUBIN(prog->nvrtc, code)
                          : nv.nvrtcGetPTX(prog->nvrtc, code));
}
