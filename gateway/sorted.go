package gateway

import "cmp"

// sortedKeys is m's keys in ascending order. An insertion sort: the maps it sorts hold a
// page's streams and its calls in flight, a handful each, and slices.Sorted would link a
// pdqsort into the wasm for each key type (about 3 KB of the brotli-compressed wasm each).
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		i := len(keys)
		keys = append(keys, k)
		for ; i > 0 && keys[i-1] > k; i-- {
			keys[i] = keys[i-1]
		}
		keys[i] = k
	}
	return keys
}
