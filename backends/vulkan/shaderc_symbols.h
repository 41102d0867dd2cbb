/*
 * The entry points of shaderc's C API that kiln calls, as an X-macro list
 * X(return type, name, (parameters)): compiler.c resolves them into its
 * table, and shaderc_bundle.c (libkiln-shaderc) hands them out by name.
 * The parameter lists use compiler.c's own declarations of shaderc's types
 * and are expanded only there.
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

#endif /* KILN_VULKAN_SHADERC_SYMBOLS_H */
