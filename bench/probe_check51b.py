"""Session 51 probe: which C++ error paths of a torch extension raise and which crash the
process on this machine.  A minimal load_inline extension (CPU only), each case in its own
process, a SIGSEGV handler printing the native backtrace (execinfo) of a crash.

    python3 bench/probe_check51b.py
"""

import subprocess
import sys
import tempfile

SRC = r"""
#include <torch/extension.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>
#include <locale>
#include <sstream>
#include <stdexcept>
static void on_segv(int) {
  void* f[64];
  const int n = backtrace(f, 64);
  backtrace_symbols_fd(f, n, 2);
  _exit(139);
}
void install() { signal(SIGSEGV, on_segv); }
void check_strings() { TORCH_CHECK(false, "only ", "strings"); }
void check_int() { TORCH_CHECK(false, "an int: ", static_cast<int64_t>(5)); }
void check_one_string() { TORCH_CHECK(false, std::string("an int: ") + std::to_string(5)); }
void check_sizes(const at::Tensor& t) { TORCH_CHECK(false, "sizes: ", t.sizes()); }
std::string oss_int() { std::ostringstream o; o << static_cast<int64_t>(5); return o.str(); }
std::string oss_classic_int() {
  std::ostringstream o;
  o.imbue(std::locale::classic());
  o << static_cast<int64_t>(5);
  return o.str();
}
std::string oss_string() { std::ostringstream o; o << "five"; return o.str(); }
std::string locale_name() { return std::locale().name(); }
void runtime_error_int() { throw std::runtime_error("an int: " + std::to_string(5)); }
std::string str_int() { return c10::str("an int: ", static_cast<int64_t>(5)); }
"""
FUNCS = ["install", "check_strings", "check_int", "check_one_string", "check_sizes", "oss_int",
         "oss_classic_int", "oss_string", "locale_name", "runtime_error_int", "str_int"]


def build(d: str):
    from torch.utils.cpp_extension import load_inline

    return load_inline("probe51", SRC, functions=FUNCS, build_directory=d, verbose=False)


if len(sys.argv) > 2:
    import torch

    m = build(sys.argv[2])
    m.install()
    f = getattr(m, sys.argv[1])
    try:
        r = f(torch.zeros(2, 3)) if sys.argv[1] == "check_sizes" else f()
        print("returned", repr(r))
    except Exception as e:
        print(type(e).__name__, str(e).splitlines()[0][:120])
    sys.exit(0)

d = tempfile.mkdtemp()
r = subprocess.run([sys.executable, __file__, "oss_string", d], capture_output=True, text=True)
print("build:", r.returncode, r.stdout.strip(), r.stderr[-500:])
print(subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0])
import torch  # noqa: E402

print("torch", torch.__version__, "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI, flush=True)
for name in FUNCS[1:]:
    r = subprocess.run([sys.executable, __file__, name, d], capture_output=True, text=True)
    print(f"{name}: rc={r.returncode} {r.stdout.strip()}", flush=True)
    if r.returncode:
        print("  " + "\n  ".join(r.stderr.strip().splitlines()[-25:]), flush=True)
so = subprocess.run(f"ls {d}/*.so", shell=True, capture_output=True, text=True).stdout.split()
for p in so:
    print(subprocess.run(["ldd", p], capture_output=True, text=True).stdout)
import os  # noqa: E402

maps = open(f"/proc/{os.getpid()}/maps").read().splitlines()
print("libstdc++ in this process:", sorted({ln.split()[-1] for ln in maps if "stdc++" in ln}))
