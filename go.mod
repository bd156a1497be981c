module github.com/tallybloom/tallybloom

go 1.26.0

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/edsrzf/mmap-go v1.2.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.49.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
