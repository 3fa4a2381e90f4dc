#!/usr/bin/env bash
# Session 52's calls, one warm machine.
#   tests: the cuda_ext build, then why the machine's extensions carry their own libstdc++ (the
#          compiler, its specs, the build.ninja flags, a minimal shared object's link line) into
#          $OUT/libstdcxx.txt, then the README's `make test` (4 pytest-xdist processes; the
#          placement tests dry-run on this one GPU) into $OUT/make-test.log; archived into
#          $OUT/s52-tests.tgz.
#   main:  the README's main job (make bench at the target shapes, every backend and peer, the
#          plots), archived into $OUT/s52-main.tgz.
#   ab:    which cuda_ext kernel the tile-decode branch of 9a19368 slowed (NOTES 52.3): each
#          kernel's time in a fp32 fwd+bwd (bench.probe_kernels52, torch.profiler), main / knob /
#          main / knob at the three target shapes, then ncu's launch, occupancy, warp-state and
#          scheduler sections of one fwd+bwd at (16, 512, 4000) for each tree; the knob tree is
#          `git archive 9a19368` unpacked into ab_knob/ (untracked, carried with the working
#          tree); archived into $OUT/s52-ab.tgz.
#   probe: the compiler the environment names (CXX=/opt/gcc/bin/g++, which torch's JIT build
#          uses): its version, where its libstdc++ comes from, its link line; a one-function
#          shared object that formats a long through an ostream, built by it and by
#          /usr/bin/g++, each loaded with ctypes after `import torch` and called in its own
#          process (rc -11: SIGSEGV), into $OUT/cxx52.txt; then ncu's warp stall reasons and
#          source counters of cuda_ext's fp32 backward at (16, 512, 4000) into
#          $OUT/ncu52-bwd-stalls.txt; archived into $OUT/s52-probe.tgz.
#   git archive 9a19368 | tar -x -C ab_knob --exclude=bench/results   # before `ab`
#   OUT=out bash bench/gpu_s52.sh tests|main|ab|probe
set -uo pipefail
case "${1:-}" in
  tests)
    source bench/gpu_env.sh
    {
      g++ --version | head -1; command -v g++ c++ cc; readlink -f "$(command -v c++)"
      echo "CXX=${CXX:-} CC=${CC:-} LDFLAGS=${LDFLAGS:-} CXXFLAGS=${CXXFLAGS:-}"
      echo "libstdc++.so -> $(g++ -print-file-name=libstdc++.so)"
      echo "libstdc++.a  -> $(g++ -print-file-name=libstdc++.a)"
      ls -la "$(dirname "$(g++ -print-libgcc-file-name)")"/libstdc++* 2>&1
      echo "-- specs"; g++ -dumpspecs | grep -n -i -B1 -A2 "stdc++\|static-lib"
      echo "-- build.ninja"; grep -h -E "^(cxx|ldflags|nvcc|link|rule link|  command)" \
        .torch_extensions/*/build.ninja
      printf '#include <sstream>\n#include <string>\nstd::string f(long v){std::ostringstream s; s << v; return s.str();}\n' > /tmp/t52.cpp
      echo "-- g++ -shared, link line"
      g++ -shared -fPIC /tmp/t52.cpp -o /tmp/t52.so -v 2>&1 | grep collect2 | tr ' ' '\n' \
        | grep -E "stdc|static|^-L|^-l" | sort -u
      echo "-- ldd /tmp/t52.so"; ldd /tmp/t52.so
      echo "-- nm /tmp/t52.so (defined ostream symbols)"; nm -DC --defined-only /tmp/t52.so | grep -c "std::" 
      for so in .torch_extensions/*/*.so; do echo "-- ldd $so"; ldd "$so"; done
      echo "-- torch's link flags"; python3 - <<'PY'
import torch.utils.cpp_extension as c, sysconfig
print("CXX:", c.get_cxx_compiler(), "| sysconfig LDSHARED:", sysconfig.get_config_var("LDSHARED"))
print("torch lib:", c.TORCH_LIB_PATH)
PY
    } > "$OUT/libstdcxx.txt" 2>&1
    cat "$OUT/libstdcxx.txt"
    gpu_make_test 420
    gpu_archive s52-tests
    ;;
  main)
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    T_BENCH=330 gpu_main_job s52-main
    ;;
  ab)
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    date +%T
    gpu_build_tree ab_knob & gpu_build_tree . & wait
    date +%T
    # The probe is this tree's file: ab_knob lacks it, so run it from here on that tree.
    gpu_ab_rounds ab52 . "main:. knob:ab_knob" timeout 90 python3 "$PWD/bench/probe_kernels52.py"
    for side in main knob; do
      tree=.; [ "$side" = knob ] && tree=ab_knob
      gpu_in_tree "$tree" timeout -s KILL 150 ncu --clock-control none -k 'regex:cln|colsum|zero' \
        -c 40 --section LaunchStats --section Occupancy --section WarpStateStats \
        --section SchedulerStats --section SpeedOfLight \
        python3 "$PWD/bench/probe_kernels52.py" --once --shapes 16x512x4000 \
        > "$OUT/ncu52-$side.txt" 2>&1
      echo "ncu $side rc=$?"; grep -E "^  [a-z_].*\(|Duration|Registers Per|Achieved Occ|Warp Cycles Per Issued" \
        "$OUT/ncu52-$side.txt" | head -80
    done
    date +%T
    gpu_archive s52-ab
    ;;
  probe)
    SKIP_CUDA_BUILD=1 source bench/gpu_env.sh
    {
      for cxx in /opt/gcc/bin/g++ /usr/bin/g++; do
        echo "== $cxx"; "$cxx" --version | head -1
        echo "libstdc++.so -> $("$cxx" -print-file-name=libstdc++.so)"
        echo "libstdc++.a  -> $("$cxx" -print-file-name=libstdc++.a)"
        "$cxx" -dumpspecs | grep -n -i "static-libstdc\|-lstdc" | cut -c1-300
        "$cxx" -print-search-dirs | sed -n '/^libraries/p' | tr ':' '\n' | head -8
      done
      ls -la /opt/gcc/lib64/libstdc++* /opt/gcc/lib/libstdc++* 2>&1 | head
      printf '%s\n' '#include <cstring>' '#include <sstream>' '#include <string>' \
        'extern "C" int fmt(long v, char* out, int n) {' \
        '  std::ostringstream s; s << v; std::string r = s.str();' \
        '  std::strncpy(out, r.c_str(), n); return static_cast<int>(r.size()); }' > /tmp/fmt52.cpp
      for cxx in /opt/gcc/bin/g++ /usr/bin/g++; do
        so=/tmp/fmt52-$(echo "$cxx" | tr '/' '_').so
        echo "== $cxx -shared: link line (libraries)"
        "$cxx" -shared -fPIC -O2 /tmp/fmt52.cpp -o "$so" -v 2>&1 | grep collect2 | tr ' ' '\n' \
          | grep -E "stdc|static|^-l" | sort -u | tr '\n' ' '; echo
        echo "-- ldd"; ldd "$so" | grep -E "stdc|gcc"
        echo "-- std:: symbols defined in it: $(nm -C --defined-only "$so" | grep -c 'std::')"
        for pre in "import torch" "pass"; do
          timeout 60 python3 -c "$pre
import ctypes; lib = ctypes.CDLL('$so'); b = ctypes.create_string_buffer(32)
lib.fmt(123456789, b, 32); print('formatted:', b.value.decode())"
          echo "-- called after '$pre': rc=$?"
        done
      done
    } > "$OUT/cxx52.txt" 2>&1
    cat "$OUT/cxx52.txt"
    timeout -s KILL 200 ncu --clock-control none -k regex:cln_bwd_stream --launch-skip 1 -c 1 \
      --section WarpStateStats --section SourceCounters \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      python3 bench/probe_kernels52.py --once --shapes 16x512x4000 > "$OUT/ncu52-bwd-stalls.txt" 2>&1
    echo "ncu rc=$?"; grep -E "stalled_.*ratio" "$OUT/ncu52-bwd-stalls.txt" | sort -k3 -n -r | head -14
    gpu_archive s52-probe
    ;;
  *) echo "usage: $0 tests|main|ab|probe" >&2; exit 2 ;;
esac
ls -la "$OUT"
