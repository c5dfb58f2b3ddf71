// Module gen holds the programs that write lanes' assembly. It is a module of
// its own, like Go's crypto _asm modules, so that users of lanes never download
// avo. Each kernel family has one program (a main package in its own folder)
// whose go:generate line names its output under ../../simd; `make generate`
// runs them all. The amd64 programs use avo; the arm64 programs print Go's arm64
// assembler syntax themselves, since avo is amd64-only.
package gen
