# Prints one line saying which tests were skipped and what they need, from
# the file internal/testskip records skips in (make test sets
# TETHER_TEST_SKIPS): lines of "what<TAB>why<TAB>test". Prints nothing when
# nothing was skipped.
BEGIN { FS = "\t" }
NF >= 3 && !seen[$1 FS $3]++ {
	if (!($1 in n)) { order[++k] = $1; why[$1] = $2 }
	n[$1]++
}
END {
	if (k == 0) exit
	line = "skipped:"
	for (i = 1; i <= k; i++) {
		w = order[i]
		line = line (i > 1 ? "," : "") " " n[w] (i == 1 ? (n[w] == 1 ? " test needs " : " tests need ") : (n[w] == 1 ? " needs " : " need ")) w " (" why[w] ")"
	}
	print line
}
