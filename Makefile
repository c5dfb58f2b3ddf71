# lanes: make demo (the main job), make test (what CI runs), make generate.
GO ?= go

.PHONY: all demo test generate check-generate bench

all: test

# The main job: the CPU report and the throughput table vs vek, gonum and naive
# Go. bench/ is its own module (it needs the peers), hence -C.
# With Debian's libsleef-dev installed, SLEEF's AVX-512 functions join the
# comparison (cgo, -tags sleef).
SLEEF_TAGS := $(if $(wildcard /usr/include/x86_64-linux-gnu/sleef.h /usr/include/sleef.h),-tags sleef)

demo:
	$(GO) -C bench run $(SLEEF_TAGS) ./cmd/lanes $(ARGS)

# generate rewrites every generated assembly file and stub from asm/gen.
# Generated files are deleted first so a kernel that lost its generator shows up.
generate:
	grep -l -r --include='*.s' --include='*.go' -e '^// Code generated .* DO NOT EDIT\.' simd | xargs -r rm -f
	cd asm/gen && $(GO) generate ./...
	gofmt -w simd

# check-generate fails when the committed assembly differs from what the
# generators write now.
check-generate: generate
	@gen=$$( { git grep -l -e '^// Code generated .* DO NOT EDIT\.' -- simd; \
	           grep -l -r -e '^// Code generated .* DO NOT EDIT\.' simd; } | sort -u); \
	  git diff --exit-code --stat -- $$gen || { echo "generated files differ from the committed ones: run make generate and commit"; exit 1; }; \
	  new=$$(git ls-files --others --exclude-standard -- $$gen); \
	  if [ -n "$$new" ]; then echo "generated files not committed: $$new"; exit 1; fi

test:
	bash .ci/test

# bench runs the simd benchmarks (every function, level and size) and the
# peer comparison in benchstat format.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./simd/
	$(GO) -C bench test $(SLEEF_TAGS) -run '^$$' -bench . ./peers/
