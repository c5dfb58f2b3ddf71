# lanes: make demo (the main job), make test (what CI runs), make generate.
GO ?= go

.PHONY: all demo test generate check-generate bench

all: test

demo:
	$(GO) run ./bench/cmd/lanes

# generate rewrites every generated assembly file and stub from asm/gen.
# Generated files are deleted first so a kernel that lost its generator shows up.
generate:
	grep -l -r --include='*.s' --include='*.go' -e '^// Code generated .* DO NOT EDIT\.' simd | xargs -r rm -f
	cd asm/gen && $(GO) generate ./...
	gofmt -w simd

# check-generate fails when the committed assembly differs from what the
# generators write now.
check-generate: generate
	git diff --exit-code -- simd
	test -z "$$(git status --porcelain -- simd)"

test:
	bash .ci/test

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./simd/
