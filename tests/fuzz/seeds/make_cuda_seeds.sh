#!/usr/bin/env bash
# Regenerates the cubin and PTX seed corpora from kernels.cu and clusters.cu
# with the CUDA toolkit's nvcc. Run by hand; the output is committed.
#
# The architectures are those whose ELF layouts the cubin reader tells apart
# (pre-sm_90, sm_90's reserved shared memory, "a" and "f" builds, ABI v8 on
# sm_100+). Cubins are named .elf: the repository ignores *.cubin as output.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=$here/../corpus
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
mkdir -p "$corpus/cubin_reader" "$corpus/ptx_reader"

for arch in sm_75 sm_90 sm_90a sm_100f sm_120; do
  "$nvcc" -cubin -arch="$arch" -o "$corpus/cubin_reader/kernels_$arch.elf" "$here/kernels.cu"
done
for arch in sm_90 sm_100a; do
  "$nvcc" -cubin -arch="$arch" -o "$corpus/cubin_reader/clusters_$arch.elf" "$here/clusters.cu"
done
for arch in sm_80 sm_90a; do
  "$nvcc" -ptx -arch="$arch" -o "$corpus/ptx_reader/kernels_$arch.ptx" "$here/kernels.cu"
done
"$nvcc" -ptx -arch=sm_90 -o "$corpus/ptx_reader/clusters_sm_90.ptx" "$here/clusters.cu"
