package gateway

import "strings"

// Price is what a model costs in USD per million tokens of each kind.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// cost is what u costs at p.
func (p Price) cost(u Usage) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheRead)*p.CacheRead + float64(u.CacheCreation)*p.CacheWrite) / 1e6
}

// priceOf is the price of model: its own, else that of the longest priced
// name it begins with (a dated release of a priced model).
func (g *Gateway) priceOf(model string) (Price, bool) {
	if p, ok := g.prices[model]; ok {
		return p, true
	}
	best, found := "", false
	var out Price
	for name, p := range g.prices {
		if strings.HasPrefix(model, name) && len(name) > len(best) {
			best, out, found = name, p, true
		}
	}
	return out, found
}

// price sets u's cost at model's price, or counts it unpriced.
func (g *Gateway) price(u *Usage, model string) {
	if p, ok := g.priceOf(model); ok && model != "" {
		u.CostUSD = p.cost(*u)
		return
	}
	u.Unpriced = u.Requests
}
