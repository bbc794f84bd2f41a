#!/bin/bash
# SPDX-License-Identifier: MIT
# cmake/shell_lint.sh SRC: shellcheck (following sourced files) on every shell script git
# tracks in SRC: fstests, benchmarks, the VM rig, tools, bash completions and CI. ctest
# shell.lint.
set -euo pipefail
cd "$1"
command -v shellcheck >/dev/null || { echo "shell.lint: shellcheck not installed (tools/install-deps.sh)" >&2; exit 1; }
files=()
while IFS= read -r -d '' f; do
    [[ -f $f ]] || continue
    case $f in *.out|*.md|*.c|*.cpp|*.hpp|*.h|*.json|*.txt|*.cmake) continue ;; esac
    # Scripts, and sourced files without #! that declare their shell (bash completions).
    if head -n 1 "$f" | grep -qE '^(#!.*(bash|/sh)( |$)|# shellcheck shell=)'; then files+=("$f"); fi
done < <(if git rev-parse --git-dir >/dev/null 2>&1; then git ls-files -z; else
             find . -path ./build -prune -o -path ./.git -prune -o -type f -print0; fi)
[[ ${#files[@]} -gt 50 ]] || { echo "shell.lint: only ${#files[@]} scripts found: wrong tree?" >&2; exit 1; }
shellcheck -x "${files[@]}"
echo "shell.lint: ${#files[@]} scripts clean"
