//go:build !unix

package bench

// settle does nothing where there is no sync(2) (see settle_unix_test.go).
func settle() {}
