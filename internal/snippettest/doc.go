// Package snippettest holds a README's code snippets to the compiled or
// type-checked files they are copied from, for tests: every line of code in
// a snippet must be a line of its source file, so a snippet cannot use what
// its source does not define.
package snippettest
