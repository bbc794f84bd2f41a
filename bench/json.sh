# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced by the benchmarks that write their results as JSON under WZ_BENCH_JSON (what
# bench/plot.sh draws):
#   bench_json_date                     -> the run's date, UTC, ISO 8601
#   bench_json_machine                  -> this machine as one JSON object: kernel, CPU model,
#                                          CPUs, memory, and the load average as the run ends
#   bench_json_write FILE ARRAY_KEY...  -> writes the JSON object on stdin to FILE, one line
#                                          per top-level field and, last and in the order
#                                          given, each named array one element per line, so
#                                          that the diff of a rerun stays readable

bench_json_date() { date -u +%Y-%m-%dT%H:%M:%SZ; }

bench_json_machine() {
	jq -nc --arg kernel "$(uname -r)" --arg cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)" \
		--argjson cpus "$(nproc)" --argjson mem_kib "$(awk '$1 == "MemTotal:" { print $2 }' /proc/meminfo)" \
		--arg load "$(cut -d ' ' -f 1-3 /proc/loadavg)" \
		'{kernel: $kernel, cpu: $cpu, cpus: $cpus, mem_kib: $mem_kib, load_average_at_end: $load}'
}

bench_json_write() { # file array-key...
	local file=$1
	shift
	# shellcheck disable=SC2016 # jq's own program
	jq -r '. as $o | $ARGS.positional as $big
		| "{",
		  (to_entries[] | select(.key as $k | $big | index($k) | not) | "  \(.key | tojson): \(.value | tojson),"),
		  ($big | to_entries[] | (.value as $k | .key as $i
		    | "  \($k | tojson): [", ($o[$k] | map("    " + tojson) | join(",\n")),
		      "  ]" + (if $i < ($big | length) - 1 then "," else "" end))),
		  "}"' --args "$@" >"$file"
}
