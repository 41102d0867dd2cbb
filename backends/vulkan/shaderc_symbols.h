/*
 * The entry points of shaderc's C API that kiln calls, as an X-macro list
 * X(return type, name, (parameters)): compiler.c resolves them into its
 * table, and shaderc_bundle.c (libkiln-shaderc) hands them out by name.
 * The parameter lists use compiler.c's own declarations of shaderc's types
 * and are expanded only there.
 *
 * Likewise the entry points of SPIRV-Tools' validator (libspirv.h) that
 * spirv_tools.c calls, with its declarations of their types; the bundle
 * hands them out too, so that the validator is there wherever kiln's own
 * shaderc is.
 */
#ifndef KILN_VULKAN_SHADERC_SYMBOLS_H
#define KILN_VULKAN_SHADERC_SYMBOLS_H

#define KILN_SHADERC_SYMBOLS(X)                                               \
  X(shaderc_compiler_t, shaderc_compiler_initialize, (void))                  \
  X(void, shaderc_get_spv_version, (unsigned *version, unsigned *revision))   \
  X(shaderc_compile_options_t, shaderc_compile_options_initialize, (void))    \
  X(void, shaderc_compile_options_release,                                    \
    (shaderc_compile_options_t options))                                      \
  X(void, shaderc_compile_options_add_macro_definition,                       \
    (shaderc_compile_options_t options, const char *name, size_t name_length, \
     const char *value, size_t value_length))                                 \
  X(void, shaderc_compile_options_set_source_language,                        \
    (shaderc_compile_options_t options, int language))                        \
  X(void, shaderc_compile_options_set_generate_debug_info,                    \
    (shaderc_compile_options_t options))                                      \
  X(void, shaderc_compile_options_set_optimization_level,                     \
    (shaderc_compile_options_t options, int level))                           \
  X(void, shaderc_compile_options_set_include_callbacks,                      \
    (shaderc_compile_options_t options, shaderc_include_resolve_fn resolver,  \
     shaderc_include_result_release_fn releaser, void *user_data))            \
  X(void, shaderc_compile_options_set_suppress_warnings,                      \
    (shaderc_compile_options_t options))                                      \
  X(void, shaderc_compile_options_set_target_env,                             \
    (shaderc_compile_options_t options, int target, uint32_t version))        \
  X(void, shaderc_compile_options_set_target_spirv,                           \
    (shaderc_compile_options_t options, uint32_t version))                    \
  X(void, shaderc_compile_options_set_warnings_as_errors,                     \
    (shaderc_compile_options_t options))                                      \
  X(shaderc_compilation_result_t, shaderc_compile_into_spv,                   \
    (const shaderc_compiler_t compiler, const char *source,                   \
     size_t source_size, int kind, const char *input_file_name,               \
     const char *entry_point_name,                                            \
     const shaderc_compile_options_t options))                                \
  X(void, shaderc_result_release, (shaderc_compilation_result_t result))      \
  X(size_t, shaderc_result_get_length, (shaderc_compilation_result_t result)) \
  X(int, shaderc_result_get_compilation_status,                               \
    (shaderc_compilation_result_t result))                                    \
  X(const char *, shaderc_result_get_bytes,                                   \
    (shaderc_compilation_result_t result))                                    \
  X(const char *, shaderc_result_get_error_message,                           \
    (shaderc_compilation_result_t result))

#define KILN_SPIRV_TOOLS_SYMBOLS(X)                                           \
  X(const char *, spvSoftwareVersionString, (void))                           \
  X(spv_context, spvContextCreate, (int env))                                 \
  X(void, spvContextDestroy, (spv_context context))                           \
  X(spv_validator_options, spvValidatorOptionsCreate, (void))                 \
  X(void, spvValidatorOptionsDestroy, (spv_validator_options options))        \
  X(void, spvValidatorOptionsSetScalarBlockLayout,                            \
    (spv_validator_options options, bool value))                              \
  X(void, spvValidatorOptionsSetUniformBufferStandardLayout,                  \
    (spv_validator_options options, bool value))                              \
  X(int, spvValidateWithOptions,                                              \
    (const spv_context_t *context,                                            \
     const spv_validator_options_t *options,                                  \
     const spv_const_binary_t *binary, spv_diagnostic *diagnostic))           \
  X(void, spvDiagnosticDestroy, (spv_diagnostic diagnostic))

/* SPV_ENV_VULKAN_1_2 of libspirv.h's spv_target_env (checked against the
 * header where the bundle is built). */
#define KILN_SPV_ENV_VULKAN_1_2 23

#endif /* KILN_VULKAN_SHADERC_SYMBOLS_H */
