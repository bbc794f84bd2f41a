#!/bin/bash
# SPDX-License-Identifier: MIT
# Comments and documents that stay true. Three rules over the source tree (the files git
# tracks, or every file outside build trees and .git when there is no git):
# - no reference to a tracker the repository does not carry: the word "issue" followed by
#   a number, in any case (a comment says why, in its own words);
# - no path into the directory beside the repository that held the design notes before
#   docs/ did (dot-dot, slash, "shared"): the project documents itself under docs/;
# - every relative link of README.md and of the Markdown pages under docs/ names a file or
#   directory that exists, and its #anchor, if any, a heading of the page it points to
#   (GitHub's anchors: lower case, punctuation dropped, spaces as '-', a repeated heading
#   with -1, -2, ...). Links inside code blocks and code spans are text, not links.
# Prints each offence as FILE:LINE: ... and exits 1 if there is any.
# Usage: check_docs.sh SOURCE_DIR
set -euo pipefail
cd "$1"

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files --cached --others --exclude-standard | LC_ALL=C sort)
else
	mapfile -t files < <(find . -path ./.git -prune -o -path './build*' -prune -o -type f -print |
		sed 's#^\./##' | LC_ALL=C sort)
fi
[ "${#files[@]}" -gt 100 ] || { echo "docs.lint: only ${#files[@]} files: wrong tree?"; exit 1; }
existing=()
for f in "${files[@]}"; do
	[ -f "$f" ] && existing+=("$f")
done

# Rules 1 and 2 on every text file (grep -I skips binary ones).
status=0
if grep -InE '[Ii][Ss][Ss][Uu][Ee][[:space:]]+#?[0-9]' -- "${existing[@]}" |
	sed 's/$/  <- a tracker reference: say what and why instead/'; then
	status=1
fi
outside=..; outside+=/shared # spelt in two pieces, so that this line is no offence itself
if grep -InF "$outside" -- "${existing[@]}" | sed 's/$/  <- a path outside the repository/'; then
	status=1
fi

# Rule 3, in perl: links of README.md and docs/**/*.md.
mapfile -t pages < <(printf '%s\n' "${existing[@]}" | grep -E '^(README\.md|docs/.*\.md)$' || true)
[ "${#pages[@]}" -gt 0 ] || { echo "docs.lint: no README.md or docs/*.md"; exit 1; }
perl -e '
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Spec;

my %anchors;    # page path -> { anchor => 1 }
sub strip_code { # path, keep code spans (for headings)
	my ($path, $keep_spans) = @_;
	open(my $fh, "<", $path) or return ();
	my @out;
	my $fence = "";
	while (my $l = <$fh>) {
		if ($fence eq "") {
			if ($l =~ /^\s{0,3}(`{3,}|~{3,})/) { $fence = substr($1, 0, 1) x length($1); push @out, "\n"; next; }
			$l =~ s/(`+)(?:(?!\1).)+?\1//g unless $keep_spans;    # code spans
			push @out, $l;
		} else {
			$fence = "" if $l =~ /^\s{0,3}\Q$fence\E\s*$/;
			push @out, "\n";
		}
	}
	close $fh;
	return @out;
}
sub slug {
	my ($h) = @_;
	$h =~ s/<[^>]*>//g;                        # inline HTML
	$h =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;        # links keep their text
	$h = lc $h;
	$h =~ s/[^\w\- ]//g;                       # punctuation (backticks, colons, dots...) goes
	$h =~ s/ /-/g;
	return $h;
}
sub anchors_of {
	my ($path) = @_;
	return $anchors{$path} if $anchors{$path};
	my %seen;
	my %a;
	for my $l (strip_code($path, 1)) {
		next unless $l =~ /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/;
		my $s = slug($1);
		my $n = $seen{$s}++;
		$a{$n ? "$s-$n" : $s} = 1;
	}
	# Explicit anchors: <a name="x"> or id="x".
	open(my $fh, "<", $path) or die;
	while (my $l = <$fh>) { $a{$1} = 1 while $l =~ /<a\s+(?:name|id)="([^"]+)"/g; }
	close $fh;
	return $anchors{$path} = \%a;
}
my $bad = 0;
for my $page (@ARGV) {
	my @lines = strip_code($page);
	for my $i (0 .. $#lines) {
		my $l = $lines[$i];
		my @targets;
		push @targets, $1 while $l =~ /\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
		push @targets, $1 if $l =~ /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/;
		for my $t (@targets) {
			next if $t =~ m{^(?:[a-z][a-z0-9+.-]*:)}i;    # http:, https:, mailto:, man: ...
			my ($file, $anchor) = split /#/, $t, 2;
			my $dest = $page;
			if ($file ne "") {
				$dest = File::Spec->canonpath(dirname($page) . "/" . $file);
				1 while $dest =~ s{(^|/)(?!\.\./)[^/]+/\.\./}{$1};
				if ($dest =~ m{^\.\./}) {
					printf "%s:%d: link to %s: outside the repository\n", $page, $i + 1, $t;
					$bad = 1;
					next;
				}
				if (!-e $dest) {
					printf "%s:%d: link to %s: no such file\n", $page, $i + 1, $t;
					$bad = 1;
					next;
				}
			}
			next unless defined $anchor && $anchor ne "";
			next unless $dest =~ /\.md$/;
			if (!anchors_of($dest)->{$anchor}) {
				printf "%s:%d: link to %s: %s has no heading with anchor #%s\n", $page, $i + 1, $t, $dest, $anchor;
				$bad = 1;
			}
		}
	}
}
exit $bad;
' "${pages[@]}" || status=1
exit "$status"
