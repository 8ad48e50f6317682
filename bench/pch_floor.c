/* Where a warm miss's time goes: in one process, as a compile worker keeps
 * NVRTC, compile each source in turn with automatic precompiled headers in
 * PCH_DIR (the first writes the PCH, the next ones use it), then link the
 * PTX with nvJitLink to a cubin. For each compile it prints one line:
 *
 *   NAME nvrtc_ms F front_end_ms F nvvm_ms F sys_ms F minor_faults N link_ms F
 *
 * nvrtc_ms is nvrtcCompileProgram's wall time, front_end_ms and nvvm_ms are
 * NVRTC's own phase times (its --time table), sys_ms and minor_faults the
 * kernel time and page faults of this process during the compile. A PCH is
 * mapped from its file at each use, so what a compile that uses one spends
 * in the kernel is mostly the PCH's pages faulted in and copied.
 * Built and run by bench/warm_miss_bench.py.
 *
 *   pch_floor CUDA_HOME SM PCH_DIR A.cu [B.cu ...]
 */
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "nvrtc_dlopen.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void usage_now(double* sys_ms, long* faults) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  *sys_ms = u.ru_stime.tv_sec * 1e3 + u.ru_stime.tv_usec / 1e3;
  *faults = u.ru_minflt;
}

/* NVRTC's --time table: "file, phase, value, unit" rows, appended per
 * compile; the last rows of each phase are this compile's. */
static void phase_times(const char* csv, double* front_end, double* nvvm) {
  FILE* f = fopen(csv, "r");
  char line[1024];
  *front_end = *nvvm = -1;
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    const char* value = strrchr(line, ',');
    if (!value) continue;
    const char* number = value;  /* "..., phase, N, ms": the field before the unit */
    while (number > line && number[-1] != ',') --number;
    if (strstr(line, "Frontend")) *front_end = atof(number);
    if (strstr(line, "NVVM Optimizer")) *nvvm = atof(number);
  }
  fclose(f);
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s CUDA_HOME SM PCH_DIR A.cu [B.cu ...]\n", argv[0]);
    return 2;
  }
  const char* home = argv[1];
  void* nvrtc = open_lib(home, "libnvrtc.so");
  void* jitlink = open_lib(home, "libnvJitLink.so");
  char arch[64], inc[4096], cccl[4096], pch_dir[4096], time_opt[4300], csv[4200], sm_arch[64];
  snprintf(arch, sizeof arch, "-arch=compute_%s", argv[2]);
  snprintf(inc, sizeof inc, "--include-path=%s/include", home);
  snprintf(cccl, sizeof cccl, "--include-path=%s/include/cccl", home);
  snprintf(pch_dir, sizeof pch_dir, "--pch-dir=%s", argv[3]);
  snprintf(csv, sizeof csv, "%s/nvrtc-time.csv", argv[3]);
  snprintf(time_opt, sizeof time_opt, "--time=%s", csv);
  snprintf(sm_arch, sizeof sm_arch, "-arch=sm_%s", argv[2]);
  const char* options[] = {arch, inc, cccl, "-pch", pch_dir, time_opt};
  const int n_options = sizeof options / sizeof options[0];

  for (int i = 4; i < argc; ++i) {
    char* source = read_file(argv[i]);
    nvrtcProgram prog;
    if (((create_fn)sym(nvrtc, "nvrtcCreateProgram"))(&prog, source, argv[i], 0, NULL, NULL) != NVRTC_SUCCESS)
      return fprintf(stderr, "nvrtcCreateProgram failed\n"), 1;
    double sys0, sys1;
    long faults0, faults1;
    usage_now(&sys0, &faults0);
    const double t0 = now_ms();
    const nvrtcResult rc = ((compile_fn)sym(nvrtc, "nvrtcCompileProgram"))(prog, n_options, options);
    const double t1 = now_ms();
    usage_now(&sys1, &faults1);
    if (rc != NVRTC_SUCCESS) {
      char* log = program_log(nvrtc, prog);
      fprintf(stderr, "NVRTC failed on %s:\n%s\n", argv[i], log);
      return 1;
    }
    size_t ptx_size = 0;
    char* ptx = take_ptx(nvrtc, &prog, &ptx_size);

    const double t2 = now_ms();
    const char* link_options[] = {sm_arch};
    nvJitLinkHandle link;
    if (((link_create_fn)sym(jitlink, "nvJitLinkCreate"))(&link, 1, link_options) != NVJITLINK_SUCCESS ||
        ((link_add_fn)sym(jitlink, "nvJitLinkAddData"))(link, NVJITLINK_INPUT_PTX, ptx, ptx_size, argv[i]) !=
            NVJITLINK_SUCCESS ||
        ((link_complete_fn)sym(jitlink, "nvJitLinkComplete"))(link) != NVJITLINK_SUCCESS)
      return fprintf(stderr, "nvJitLink failed on %s\n", argv[i]), 1;
    ((link_destroy_fn)sym(jitlink, "nvJitLinkDestroy"))(&link);
    const double t3 = now_ms();

    double front_end, nvvm;
    phase_times(csv, &front_end, &nvvm);
    printf("%s nvrtc_ms %.1f front_end_ms %.1f nvvm_ms %.1f sys_ms %.1f minor_faults %ld link_ms %.1f\n", argv[i],
           t1 - t0, front_end, nvvm, sys1 - sys0, faults1 - faults0, t3 - t2);
    fflush(stdout);
    free(ptx);
    free(source);
  }
  return 0;
}
