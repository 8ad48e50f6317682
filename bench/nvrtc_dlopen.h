/* What the bench's C programs share: NVRTC and nvJitLink opened from a
 * toolkit with dlopen, as a framework process does, the entry points they
 * call as function pointer types, and reading a source file. */
#pragma once

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <nvJitLink.h>
#include <nvrtc.h>

typedef nvrtcResult (*create_fn)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
typedef nvrtcResult (*compile_fn)(nvrtcProgram, int, const char* const*);
typedef nvrtcResult (*size_fn)(nvrtcProgram, size_t*);
typedef nvrtcResult (*get_fn)(nvrtcProgram, char*);
typedef nvrtcResult (*destroy_fn)(nvrtcProgram*);
typedef nvJitLinkResult (*link_create_fn)(nvJitLinkHandle*, uint32_t, const char**);
typedef nvJitLinkResult (*link_add_fn)(nvJitLinkHandle, nvJitLinkInputType, const void*, size_t, const char*);
typedef nvJitLinkResult (*link_complete_fn)(nvJitLinkHandle);
typedef nvJitLinkResult (*link_size_fn)(nvJitLinkHandle, size_t*);
typedef nvJitLinkResult (*link_get_fn)(nvJitLinkHandle, void*);
typedef nvJitLinkResult (*link_destroy_fn)(nvJitLinkHandle*);

static void* open_lib(const char* home, const char* name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/lib64/%s", home, name);
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    exit(1);
  }
  return h;
}

static void* sym(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
    exit(1);
  }
  return p;
}

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* s = malloc((size_t)n + 1);
  if (fread(s, 1, (size_t)n, f) != (size_t)n) {
    perror(path);
    exit(1);
  }
  s[n] = 0;
  fclose(f);
  return s;
}

/* NVRTC's log of a program. */
static char* program_log(void* nvrtc, nvrtcProgram prog) {
  size_t n = 0;
  ((size_fn)sym(nvrtc, "nvrtcGetProgramLogSize"))(prog, &n);
  char* log = malloc(n + 1);
  ((get_fn)sym(nvrtc, "nvrtcGetProgramLog"))(prog, log);
  return log;
}

/* A compiled program's PTX (its size in *size); the program is destroyed. */
static char* take_ptx(void* nvrtc, nvrtcProgram* prog, size_t* size) {
  *size = 0;
  ((size_fn)sym(nvrtc, "nvrtcGetPTXSize"))(*prog, size);
  char* ptx = malloc(*size);
  ((get_fn)sym(nvrtc, "nvrtcGetPTX"))(*prog, ptx);
  ((destroy_fn)sym(nvrtc, "nvrtcDestroyProgram"))(prog);
  return ptx;
}
