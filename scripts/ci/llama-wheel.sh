#!/usr/bin/env bash
# Build the portable llama-cpp-python wheel into a wheelhouse, once (found there: nothing to do). Its own
# script so the Dockerfile compiles in a layer that prereview's own source never invalidates; install.sh
# (the action, the Dockerfile's next layer) calls it too. Env:
#   PREREVIEW_LLAMA_VERSION  llama-cpp-python version (required)
#   PREREVIEW_LLAMA_BUILD    cpu | cpu-all | cuda (default cpu)
#   PREREVIEW_WHEELHOUSE     where the wheel goes (required)
#   PREREVIEW_BUILD_PYTHON   a python with pip to build with (default python3)
#
# Portable: no -march=native (a wheel restored on another CPU would die with SIGILL). Dynamic backends
# (GGML_BACKEND_DL): the CPU backend checks the CPU when it loads and refuses one that lacks its
# instructions (a one-line error at install, never a crash). The backend libraries go beside libggml
# (llama_cpp/lib), where prereview loads them from.
#   cpu      one CPU backend, x86-64-v3 (AVX2, FMA, F16C, BMI2: x86 server CPUs since 2013-2015): one
#            variant compiled, about as long as a native build
#   cpu-all  all 14 x86 variants (x64, SSE4.2 … AVX-512, AMX), the best picked at load: any x86 CPU,
#            about 3.6 times the compile
#   cuda     the CUDA backend plus the x86-64-v3 CPU one (needs the CUDA toolkit)
set -euo pipefail
: "${PREREVIEW_LLAMA_VERSION:?set PREREVIEW_LLAMA_VERSION}" "${PREREVIEW_WHEELHOUSE:?set PREREVIEW_WHEELHOUSE}"
build="${PREREVIEW_LLAMA_BUILD:-cpu}"
py="${PREREVIEW_BUILD_PYTHON:-python3}"
DL="-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DCMAKE_INSTALL_BINDIR=llama_cpp/lib"
V3="-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
case "$build" in
  cpu) cmake_args="$DL $V3" ;;
  cpu-all) cmake_args="$DL -DGGML_CPU_ALL_VARIANTS=ON" ;;
  cuda) cmake_args="-DGGML_CUDA=ON $DL $V3" ;;
  *) echo "prereview-install: llama-build must be cpu, cpu-all or cuda (got '$build')" >&2; exit 2 ;;
esac
mkdir -p "$PREREVIEW_WHEELHOUSE"
if compgen -G "$PREREVIEW_WHEELHOUSE/llama_cpp_python-$PREREVIEW_LLAMA_VERSION-*.whl" >/dev/null; then
  echo "prereview-install: llama-cpp-python $PREREVIEW_LLAMA_VERSION: wheel found in $PREREVIEW_WHEELHOUSE (no compile)"
  exit 0
fi
echo "prereview-install: llama-cpp-python $PREREVIEW_LLAMA_VERSION: compiling a portable $build wheel (once; minutes)"
t0=$SECONDS
# --no-binary: a binary wheel from an index would be whatever that index built, not this build.
CMAKE_ARGS="$cmake_args" "$py" -I -m pip wheel --disable-pip-version-check --quiet --no-deps \
  --no-binary llama-cpp-python -w "$PREREVIEW_WHEELHOUSE" "llama-cpp-python==$PREREVIEW_LLAMA_VERSION"
echo "$cmake_args" > "$PREREVIEW_WHEELHOUSE/CMAKE_ARGS"
echo "prereview-install: llama-cpp-python compiled in $((SECONDS - t0)) s"
