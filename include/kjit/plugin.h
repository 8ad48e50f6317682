/* kjit's plugin ABI: the only header a plugin compiles against. C only, no
 * C++ types across the boundary.
 *
 * A plugin is a shared library exporting one function,
 *
 *     const kjit_plugin_info* kjit_plugin_get_info(void);
 *
 * returning a static description: the ABI version it was built against, its
 * name and version, and what it adds: passes, pipeline edits, a cache-key
 * hook. kjitd loads plugins named in its configuration (or KJIT_PLUGIN_PATHS),
 * never from a request; a plugin built for another ABI version is refused at
 * start-up with a clear message. Everything a plugin returns is copied by
 * kjit before the call returns, so static or stack storage is fine.
 */
#ifndef KJIT_PLUGIN_H
#define KJIT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KJIT_PLUGIN_API_VERSION 1
#define KJIT_PLUGIN_ENTRY_POINT "kjit_plugin_get_info"

/* Arguments given to a pass: "key" -> "value", from the pipeline's defaults
 * and the request ("--pass-arg my-pass.key=value"). */
typedef struct kjit_pass_arg {
  const char* key;
  const char* value;
} kjit_pass_arg;

/* What a pass sees. `ir` is not NUL-terminated; `ir_kind` is one of
 * "cuda-source", "ptx", "llvm", "cubin", and for AMD pipelines "hip-source",
 * "amdgcn-object", "hsaco"; `target` is canonical ("cuda:90", "hip:gfx90a"). */
typedef struct kjit_pass_input {
  const char* ir;
  size_t ir_size;
  const char* ir_kind;
  const char* target;
  const kjit_pass_arg* args;
  size_t arg_count;
} kjit_pass_input;

/* How a pass answers: call `write_ir` with the output IR (once, or several
 * times to append) and `diagnostic` for messages; they copy what they get. */
typedef struct kjit_pass_output {
  void* host;
  void (*write_ir)(void* host, const char* data, size_t size);
  void (*diagnostic)(void* host, const char* message);
} kjit_pass_output;

/* Returns 0 on success; anything else fails the request with the
 * diagnostics as the log. */
typedef int (*kjit_pass_fn)(const kjit_pass_input* input, const kjit_pass_output* output);

typedef struct kjit_pass_desc {
  const char* name;    /* unique across kjit and all plugins */
  const char* version; /* enters the cache key */
  const char* takes;   /* IR kind in */
  const char* gives;   /* IR kind out */
  const char* const* arg_keys; /* accepted argument keys, may be NULL */
  size_t arg_key_count;
  kjit_pass_fn run;
} kjit_pass_desc;

typedef struct kjit_stage_desc {
  const char* name;
  const char* takes;
  const char* gives;
  const char* const* passes;
  size_t pass_count;
} kjit_stage_desc;

typedef enum kjit_edit_op {
  KJIT_EDIT_INSERT_BEFORE = 0,    /* insert `pass` before `anchor` */
  KJIT_EDIT_INSERT_AFTER = 1,     /* insert `pass` after `anchor` */
  KJIT_EDIT_DISABLE = 2,          /* remove `anchor` */
  KJIT_EDIT_REPLACE = 3,          /* put `pass` in place of `anchor` */
  KJIT_EDIT_OVERRIDE_STAGE = 4,   /* replace the stage named stages[0].name */
  KJIT_EDIT_OVERRIDE_PIPELINE = 5 /* the pipeline named `pipeline` is `stages` */
} kjit_edit_op;

typedef struct kjit_edit_desc {
  kjit_edit_op op;
  /* NULL: the edit applies to every request whose pipeline has the anchor.
   * A name: only to requests that select that pipeline (and for
   * OVERRIDE_PIPELINE, the name of the pipeline the plugin defines). */
  const char* pipeline;
  const char* anchor;
  const char* pass;
  const kjit_stage_desc* stages; /* OVERRIDE_STAGE: 1; OVERRIDE_PIPELINE: all */
  size_t stage_count;
  const char* const* inputs;     /* OVERRIDE_PIPELINE: input kinds served ("llvm-ir", ...) */
  size_t input_count;
} kjit_edit_desc;

/* The cache-key hook sees the request's input and can add named components
 * or replace the input's digest (e.g. a hash that ignores debug locations). */
typedef struct kjit_key_input {
  const char* input;
  size_t input_size;
  const char* input_kind; /* "cuda-source", "ptx", "llvm-ir", "llvm-bitcode" */
  const char* target;
} kjit_key_input;

typedef struct kjit_key_output {
  void* host;
  void (*add_component)(void* host, const char* name, const char* value);
  void (*replace_input_digest)(void* host, const char* digest);
} kjit_key_output;

/* Returns 0 on success; anything else fails the request. */
typedef int (*kjit_key_fn)(const kjit_key_input* input, const kjit_key_output* output);

typedef struct kjit_plugin_info {
  uint32_t api_version; /* KJIT_PLUGIN_API_VERSION */
  const char* name;
  const char* version;
  const kjit_pass_desc* passes;
  size_t pass_count;
  const kjit_edit_desc* edits;
  size_t edit_count;
  kjit_key_fn key_hook;         /* may be NULL */
  const char* key_hook_pipeline; /* NULL: every request; else only that pipeline's */
} kjit_plugin_info;

typedef const kjit_plugin_info* (*kjit_plugin_get_info_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* KJIT_PLUGIN_H */
