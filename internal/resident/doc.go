// Package resident says how many pages of a mapping or a file the page
// cache holds (mincore(2), on Linux), for the tests that check which of a
// filter's pages an operation brings in.
package resident
