/* What a framework process pays to compile one kernel itself: dlopen NVRTC
 * and nvJitLink, CUDA C++ -> PTX (-arch=compute_SM, the toolkit's include
 * directories, as kjitd passes them) -> cubin (-arch=sm_SM), write the cubin.
 * Built by bench/peer_comparison.py at run time; run as a whole process.
 *
 *   peer_nvrtc CUDA_HOME SM IN.cu OUT.cubin
 */
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

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s CUDA_HOME SM IN.cu OUT.cubin\n", argv[0]);
    return 2;
  }
  const char* home = argv[1];
  void* nvrtc = open_lib(home, "libnvrtc.so");
  void* jitlink = open_lib(home, "libnvJitLink.so");

  char arch[64], inc[4096], cccl[4096], sm_arch[64];
  const char* options[3];
  int n_options = 0;
  struct stat st;
  snprintf(arch, sizeof arch, "-arch=compute_%s", argv[2]);
  options[n_options++] = arch;
  snprintf(inc, sizeof inc, "--include-path=%s/include", home);
  options[n_options++] = inc;
  snprintf(cccl, sizeof cccl, "%s/include/cccl", home);
  if (stat(cccl, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(cccl, sizeof cccl, "--include-path=%s/include/cccl", home);
    options[n_options++] = cccl;
  }

  char* source = read_file(argv[3]);
  nvrtcProgram prog;
  if (((create_fn)sym(nvrtc, "nvrtcCreateProgram"))(&prog, source, argv[3], 0, NULL, NULL) != NVRTC_SUCCESS) {
    fprintf(stderr, "nvrtcCreateProgram failed\n");
    return 1;
  }
  nvrtcResult rc = ((compile_fn)sym(nvrtc, "nvrtcCompileProgram"))(prog, n_options, options);
  if (rc != NVRTC_SUCCESS) {
    size_t n = 0;
    ((size_fn)sym(nvrtc, "nvrtcGetProgramLogSize"))(prog, &n);
    char* log = malloc(n + 1);
    ((get_fn)sym(nvrtc, "nvrtcGetProgramLog"))(prog, log);
    fprintf(stderr, "NVRTC failed:\n%s\n", log);
    return 1;
  }
  size_t ptx_size = 0;
  ((size_fn)sym(nvrtc, "nvrtcGetPTXSize"))(prog, &ptx_size);
  char* ptx = malloc(ptx_size);
  ((get_fn)sym(nvrtc, "nvrtcGetPTX"))(prog, ptx);
  ((destroy_fn)sym(nvrtc, "nvrtcDestroyProgram"))(&prog);

  snprintf(sm_arch, sizeof sm_arch, "-arch=sm_%s", argv[2]);
  const char* link_options[] = {sm_arch};
  nvJitLinkHandle link;
  if (((link_create_fn)sym(jitlink, "nvJitLinkCreate"))(&link, 1, link_options) != NVJITLINK_SUCCESS ||
      ((link_add_fn)sym(jitlink, "nvJitLinkAddData"))(link, NVJITLINK_INPUT_PTX, ptx, ptx_size, argv[3]) !=
          NVJITLINK_SUCCESS ||
      ((link_complete_fn)sym(jitlink, "nvJitLinkComplete"))(link) != NVJITLINK_SUCCESS) {
    fprintf(stderr, "nvJitLink failed\n");
    return 1;
  }
  size_t cubin_size = 0;
  ((link_size_fn)sym(jitlink, "nvJitLinkGetLinkedCubinSize"))(link, &cubin_size);
  char* cubin = malloc(cubin_size);
  ((link_get_fn)sym(jitlink, "nvJitLinkGetLinkedCubin"))(link, cubin);
  ((link_destroy_fn)sym(jitlink, "nvJitLinkDestroy"))(&link);

  FILE* out = fopen(argv[4], "wb");
  if (!out || fwrite(cubin, 1, cubin_size, out) != cubin_size || fclose(out) != 0) {
    perror(argv[4]);
    return 1;
  }
  return 0;
}
