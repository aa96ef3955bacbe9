#!/usr/bin/env bash
# The tree's own format and clang-tidy: scripts/test.sh's "lint" stage.
#   1. clang-format --dry-run -Werror (.clang-format) over the C and C++ of src/ tests/ bench/
#      tools/ fuzz/ (not tests/layers/fixture: the layer check's data, bad on purpose).
#   2. clang-tidy (.clang-tidy) over src/'s translation units, from BUILD's
#      compile_commands.json (configure and build BUILD first: the seccomp programs' header is
#      generated), JOBS in parallel. A BUILD configured with CMAKE_UNITY_BUILD (scripts/test.sh's
#      ASan build) is linted by its unity files, each several of src/'s files: each system header
#      (nlohmann-json, asio, fmt) is then parsed and matched once a unity file, not once a
#      source file, and the whole takes under half the time.
# Exits non-zero on any format difference or clang-tidy finding, printing each.
#
#   scripts/lint.sh [BUILD]            both (BUILD defaults to build)
#   scripts/lint.sh --format-only      only the format
#   scripts/lint.sh --tidy-only [BUILD]
#   OARBANK_LINT_JOBS=N                clang-tidy processes (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
format=1 tidy=1
case ${1:-} in
  --format-only) tidy=0; shift ;;
  --tidy-only) format=0; shift ;;
esac
build=${1:-build}
jobs=${OARBANK_LINT_JOBS:-$(nproc)}
status=0

if ((format)); then
  mapfile -t files < <(find src tests bench tools fuzz -path tests/layers/fixture -prune -o \
    -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.c' -o -name '*.h' \) -print | sort)
  if ! clang-format --dry-run -Werror "${files[@]}"; then
    echo "lint: clang-format: the files above differ from .clang-format (clang-format -i FILE)" >&2
    status=1
  fi
fi

if ((tidy)); then
  [[ -f $build/compile_commands.json ]] || {
    echo "lint: $build/compile_commands.json missing: configure $build first (cmake -B $build)" >&2
    exit 66
  }
  # The generated sources (build/generated) are not ours to lint, and the seccomp programs'
  # arrays would only slow it down. The compile commands are GCC's: GCC's own warning options
  # are unknown to clang, and -Werror would make clang's warnings (which differ from GCC's, the
  # compiler that builds with -Werror) errors that .clang-tidy's check list cannot turn off.
  # clang-tidy exits non-zero on a finding (WarningsAsErrors: '*'); run-clang-tidy then too.
  # A unity file is BUILD's own (BUILD/src/.../Unity/unity_N_cxx.cxx) and includes src/'s files
  # by their paths: .clang-tidy's HeaderFilterRegex shows what is found in them, and
  # bugprone-suspicious-include, which the unity file's own #include "x.cpp" lines would trip,
  # is off for that run alone (and a grep below).
  build_dir=$(cd "$build" && pwd)
  unity=()
  if grep -q '/Unity/unity_' "$build/compile_commands.json"; then
    unity=(-checks=-bugprone-suspicious-include)
  fi
  # tidy COMPILE_DIR LOG ARGS...: run-clang-tidy over ARGS (its options, then the files' regexes)
  # with the compile commands of COMPILE_DIR; on a finding, each one once, and status 1.
  tidy() {
    local compile_dir=$1 log=$2
    shift 2
    run-clang-tidy -p "$compile_dir" -j "$jobs" -quiet \
      -extra-arg=-Wno-unknown-warning-option -extra-arg=-Wno-error "$@" >"$log" 2>&1 && return
    sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^/.*: (error|warning):' | sort -u >&2 || cat "$log" >&2
    echo "lint: clang-tidy found the above (.clang-tidy; full log: $log)" >&2
    status=1
  }
  tidy "$build" "$build/clang-tidy.log" "${unity[@]}" "^($PWD/src/|$build_dir/src/.*/Unity/)"
  if ((${#unity[@]})); then
    # What a unity run cannot see. misc-unused-using-decls and misc-unused-alias-decls look at
    # the main file alone (clang-tidy 14), which is the unity file: they run file by file on the
    # files of src/ that hold a using-declaration or a namespace alias, from a build with one
    # compile command a file (OARBANK_LINT_FILE_BUILD, default build/, configured and built).
    # And bugprone-suspicious-include, off above, is a grep for an #include of a source file.
    file_build=${OARBANK_LINT_FILE_BUILD:-build}
    mapfile -t declaring < <(grep -rlE '^\s*using\s+[A-Za-z_:][A-Za-z0-9_:<>]*::[A-Za-z0-9_~]+\s*;|^\s*namespace\s+\w+\s*=' \
      src --include='*.cpp' | sort)
    if [[ ! -f $file_build/compile_commands.json ]]; then
      echo "lint: $file_build/compile_commands.json missing: the file-by-file checks need it (OARBANK_LINT_FILE_BUILD)" >&2
      status=1
    elif ((${#declaring[@]})); then
      tidy "$file_build" "$build/clang-tidy-files.log" \
        -checks='-*,misc-unused-using-decls,misc-unused-alias-decls' "${declaring[@]/#/$PWD/}"
    fi
    if grep -rnE '#include\s*[<"][^>"]*\.(c|cc|cpp|cxx)[>"]' src >&2; then
      echo "lint: the above include a source file (bugprone-suspicious-include)" >&2
      status=1
    fi
  fi
fi
exit "$status"
