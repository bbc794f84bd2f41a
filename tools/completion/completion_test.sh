#!/bin/bash
# SPDX-License-Identifier: MIT
# tools/completion/completion_test.sh WZERO SRC: ctest cli.completion. Checks the bash
# completion scripts of tools/completion: `bash -n`, then a table of command lines completed
# as bash does on TAB (COMP_WORDS split at COMP_WORDBREAKS, COMP_CWORD, COMP_LINE,
# COMP_POINT; the completer named by `complete -p`), with Debian's bash-completion loaded,
# against expected COMPREPLY lists. Runs against the wzero binary WZERO (options from its
# --help), a stub wzero that lists columns (stat/map -o), and a wzero that cannot run (the
# scripts' own lists), and checks that the scripts' lists hold every option --help prints.
set -uo pipefail
wzero_bin=$(readlink -f "${1:?usage: completion_test.sh WZERO SRC}")
src=$(readlink -f "${2:?usage: completion_test.sh WZERO SRC}")
comp_dir=$src/tools/completion
bash_completion=${BASH_COMPLETION:-/usr/share/bash-completion/bash_completion}
[[ -r $bash_completion ]] || { echo "cli.completion: $bash_completion missing (tools/install-deps.sh installs bash-completion)" >&2; exit 1; }

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

for script in "$comp_dir/wzero" "$comp_dir/wzero-fallocate"; do
	bash -n "$script" || fail "bash -n $script"
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/wz-completion.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/bin-real" "$scratch/bin-stub" "$scratch/bin-broken" "$scratch/files"
ln -s "$(readlink -f "$wzero_bin")" "$scratch/bin-real/wzero"
# The stub lists columns the way lsblk --list-columns -r -n does (name, then its text) and
# otherwise says nothing: the options then come from the scripts' own lists.
cat >"$scratch/bin-stub/wzero" <<'STUB'
#!/bin/bash
case "$*" in
"stat --list-columns -r -n") printf '%s\n' 'PATH path\x20of\x20the\x20target' 'METHOD zeroing\x20method' 'DISC-MAX discard\x20limit' 'MAJ:MIN device\x20number' ;;
"map --list-columns -r -n") printf '%s\n' 'LOGICAL file\x20offset' 'PHYSICAL device\x20offset' 'FLAGS extent\x20flags' ;;
esac
STUB
printf '#!/bin/sh\nexit 1\n' >"$scratch/bin-broken/wzero"
chmod +x "$scratch/bin-stub/wzero" "$scratch/bin-broken/wzero"
touch "$scratch/files/image.raw" "$scratch/files/image.qcow" "$scratch/files/log"
cd "$scratch/files" || exit 1

# shellcheck source=/dev/null
. "$bash_completion"
# shellcheck source=tools/completion/wzero
. "$comp_dir/wzero"
# shellcheck source=tools/completion/wzero-fallocate
. "$comp_dir/wzero-fallocate"

# compopt works only inside a completion bash started; here it records what was asked.
compopt() { comp_options+=("$@"); }
comp_options=()

# complete LINE: COMPREPLY for LINE with the cursor at its end, sorted, one line.
complete_line() {
	local line=$1 word='' c i
	local -a comp_words=()
	# Split as readline does: blanks separate words, a COMP_WORDBREAKS character other than
	# a blank is a word of its own ("--method=x" is --method, =, x).
	for ((i = 0; i < ${#line}; i++)); do
		c=${line:i:1}
		if [[ $c == [[:blank:]] ]]; then
			[[ $word ]] && comp_words+=("$word")
			word=''
		elif [[ $c == [=:] ]]; then
			[[ $word ]] && comp_words+=("$word")
			comp_words+=("$c")
			word=''
		else
			word+=$c
		fi
	done
	# The cursor's word: what follows the last break, empty after a blank; right after "=",
	# bash completes the word "=" itself (checked with an interactive bash on a pty).
	[[ $word || $line == *[[:blank:]] ]] && comp_words+=("$word")
	COMP_WORDS=("${comp_words[@]}")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE=$line
	COMP_POINT=${#line}
	COMPREPLY=()
	comp_options=()
	local spec func
	spec=$(complete -p "${COMP_WORDS[0]}") || { echo "<no completion for ${COMP_WORDS[0]}>"; return; }
	func=${spec#*-F }
	func=${func%% *}
	"$func" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	local reply
	reply=$(printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort | paste -sd ' ' -)
	echo "$reply${comp_options[*]:+ [${comp_options[*]}]}"
}

# check PATH-DIR LINE EXPECTED: EXPECTED is the sorted reply, words separated by one blank.
check() {
	local dir=$1 line=$2 expected=$3 got
	got=$(PATH=$scratch/$dir:$PATH complete_line "$line")
	if [[ $got == "$expected" ]]; then
		echo "ok: [$dir] '$line' -> $got"
	else
		fail "[$dir] '$line': expected '$expected', got '$got'"
	fi
}

for dir in bin-real bin-stub bin-broken; do
	check $dir 'wzero ' 'alloc bench map stat verify'
	check $dir 'wzero al' 'alloc'
	check $dir 'wzero --engine ' 'auto io_uring psync'
	check $dir 'wzero --engine=' 'auto io_uring psync'
	check $dir 'wzero --engine=ps' 'psync'
	check $dir 'wzero --engine psync ' 'alloc bench map stat verify'
	check $dir 'wzero --engine=psync st' 'stat'
	check $dir 'wzero --ver' '--version'
	check $dir 'wzero alloc --me' '--method'
	check $dir 'wzero alloc --method ' 'auto kernel nvme write zeroout'
	check $dir 'wzero alloc --method=' 'auto kernel nvme write zeroout'
	check $dir 'wzero alloc --method z' 'zeroout'
	check $dir 'wzero alloc --in-place ' 'auto never require'
	check $dir 'wzero alloc --verify=' 'data extents none'
	check $dir 'wzero alloc --verify=d' 'data'
	check $dir 'wzero alloc --verify ima' 'image.qcow image.raw [-o filenames]'
	check $dir 'wzero alloc --keep' ''
	check $dir 'wzero alloc --punch' ''
	check $dir 'wzero alloc --passthrough ' 'auto ioctl uring_cmd'
	check $dir 'wzero alloc --no-' '--no-fallback'
	check $dir 'wzero alloc -l ' 'bytes'
	check $dir 'wzero alloc -l 1' ''
	check $dir 'wzero alloc --offset ' 'bytes'
	check $dir 'wzero alloc --length=' 'bytes'
	check $dir 'wzero alloc --queue-depth ' ''
	check $dir 'wzero alloc -l 1M ima' 'image.qcow image.raw [-o filenames]'
	check $dir 'wzero alloc --method nvme -l 1M l' 'log [-o filenames]'
	check $dir 'wzero --engine psync alloc --me' '--method'
	check $dir 'wzero stat ima' 'image.qcow image.raw [-o filenames]'
	check $dir 'wzero verify --da' '--data'
	check $dir 'wzero map -o ' 'bytes'
	check $dir 'wzero bench ' 'write'
	check $dir 'wzero bench write --mode ' 'auto dsync flush fua through'
	check $dir 'wzero bench write --completion ' 'adaptive interrupt poll'
	check $dir 'wzero bench write --qd ' ''
	check $dir 'wzero bench write --bs ' 'bytes'
	check $dir 'wzero bench write --unsafe' '--unsafe-through'
	check $dir 'wzero-fallocate -' '--force --help --keep-size --length --offset --posix --verbose --version --write-zeroes --zero-range'
	check $dir 'wzero-fallocate --pu' ''
	check $dir 'wzero-fallocate --wr' '--write-zeroes'
	check $dir 'wzero-fallocate -l ' 'bytes'
	check $dir 'wzero-fallocate -o 1M -l 1' ''
	check $dir 'wzero-fallocate -l 1M ima' 'image.qcow image.raw [-o filenames]'
	check $dir 'wzero-fallocate -V ' ''
done

# Columns come from the wzero being completed: the stub's here, and none from a wzero that
# cannot list them (it has no -o/--output either).
check bin-stub 'wzero stat -o ' 'DISC-MAX, MAJ:MIN, METHOD, PATH, [-o nospace]'
check bin-stub 'wzero stat --output ' 'DISC-MAX, MAJ:MIN, METHOD, PATH, [-o nospace]'
check bin-stub 'wzero stat --output=' 'DISC-MAX, MAJ:MIN, METHOD, PATH, [-o nospace]'
check bin-stub 'wzero stat -o PATH,' 'PATH,DISC-MAX, PATH,MAJ:MIN, PATH,METHOD, [-o nospace]'
check bin-stub 'wzero stat -o PATH,ME' 'PATH,METHOD, [-o nospace]'
check bin-stub 'wzero stat -o +' '+DISC-MAX, +MAJ:MIN, +METHOD, +PATH, [-o nospace]'
check bin-stub 'wzero stat -o +PATH,' '+PATH,DISC-MAX, +PATH,MAJ:MIN, +PATH,METHOD, [-o nospace]'
# Readline completes only what follows the last ':' (a COMP_WORDBREAKS character).
check bin-stub 'wzero stat -o MAJ' 'MAJ:MIN, [-o nospace]'
check bin-stub 'wzero stat -o MAJ:' 'MIN, [-o nospace]'
check bin-stub 'wzero stat -o PATH,MAJ:M' 'MIN, [-o nospace]'
check bin-stub 'wzero stat -o MAJ:MIN,P' 'MIN,PATH, [-o nospace]'
check bin-stub 'wzero map --output ' 'FLAGS, LOGICAL, PHYSICAL, [-o nospace]'
check bin-stub 'wzero map --output PHYSICAL,L' 'PHYSICAL,LOGICAL, [-o nospace]'
check bin-broken 'wzero stat -o ' ' [-o nospace]'
# And from the real binary, where it lists them.
for level in stat map; do
	expected_columns=$("$wzero_bin" $level --list-columns -r -n 2>/dev/null | cut -d' ' -f1 | LC_ALL=C sort | sed 's/$/,/' | paste -sd ' ' -)
	option=--output
	[[ $level == stat ]] && option=-o
	if [[ $expected_columns ]]; then
		check bin-real "wzero $level $option " "$expected_columns [-o nospace]"
	else
		echo "note: $wzero_bin $level --list-columns -r -n lists no columns"
	fi
done

# Every option `wzero ... --help` prints is in the scripts' own lists, so that completion
# without a runnable wzero is complete too.
for level in '' stat alloc map verify bench 'bench write'; do
	# shellcheck disable=SC2086 # the level is zero, one or two words
	help_options=$(_comp_cmd_wzero__help_options "$wzero_bin" $level | LC_ALL=C sort)
	[[ $help_options ]] || fail "no options read from '$wzero_bin $level --help'"
	fallback=$(_comp_cmd_wzero__fallback_options "$level" | tr ' ' '\n' | LC_ALL=C sort)
	missing=$(LC_ALL=C comm -23 <(echo "$help_options") <(echo "$fallback") | paste -sd ' ' -)
	[[ -z $missing ]] || fail "_comp_cmd_wzero__fallback_options '$level' lacks $missing (from --help)"
done

# The same for wzero-fallocate, next to wzero in the build (another part of the CLI).
fallocate_bin=$(dirname "$wzero_bin")/wzero-fallocate
if [[ -x $fallocate_bin ]]; then
	help_options=$(_comp_cmd_wzero__help_options "$fallocate_bin" | LC_ALL=C sort)
	offered=$(_comp_cmd_wzero_fallocate__options | tr ' ' '\n' | LC_ALL=C sort)
	[[ $help_options ]] || fail "no options read from '$fallocate_bin --help'"
	[[ $help_options == "$offered" ]] ||
		fail "wzero-fallocate offers '$(paste -sd ' ' <<<"$offered")', its --help lists '$(paste -sd ' ' <<<"$help_options")' (less the refused)"
else
	echo "note: no $fallocate_bin to check _comp_cmd_wzero_fallocate__options against"
fi

if ((failures)); then
	echo "cli.completion: $failures failure(s)"
	exit 1
fi
echo "cli.completion: all completions as expected"
