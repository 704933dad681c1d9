package workspace

import "fmt"

// DecodeProduct checks and decodes data, the bytes of outputFile (named
// relative to its task: plan.json, reviews/<id>.json, outputs/<id>.json),
// with the rules the daemon applies to a product on disk: the size and
// depth limits, the product's schema, and its fields. A store that keeps
// products as rows rather than files judges them with it.
func DecodeProduct(outputFile string, data []byte, limits LimitSettings) (Product, error) {
	p, err := ClassifyProduct(outputFile)
	if err != nil || p.Kind == ProductNone {
		return p, err
	}
	if limits.MaxFileBytes <= 0 {
		limits.MaxFileBytes = DefaultMaxFileBytes
	}
	if limits.MaxDepth <= 0 {
		limits.MaxDepth = DefaultMaxDepth
	}
	if len(data) > limits.MaxFileBytes {
		return Product{}, &Error{Kind: ErrUnsafe, Op: "product " + outputFile,
			Msg: fmt.Sprintf("%d bytes, more than the limit of %d", len(data), limits.MaxFileBytes)}
	}
	return DecodeProductWithin(p, outputFile, data, limits.MaxDepth)
}
