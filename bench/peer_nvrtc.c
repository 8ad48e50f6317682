/* What a framework process pays to compile one kernel itself: dlopen NVRTC
 * and nvJitLink, CUDA C++ -> PTX (-arch=compute_SM, the toolkit's include
 * directories, as kjitd passes them) -> cubin (-arch=sm_SM), write the cubin.
 * Built by bench/peer_comparison.py at run time; run as a whole process.
 *
 *   peer_nvrtc CUDA_HOME SM IN.cu OUT.cubin
 */
#include "nvrtc_dlopen.h"

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
    char* log = program_log(nvrtc, prog);
    fprintf(stderr, "NVRTC failed:\n%s\n", log);
    return 1;
  }
  size_t ptx_size = 0;
  char* ptx = take_ptx(nvrtc, &prog, &ptx_size);

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
