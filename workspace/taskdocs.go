package workspace

import "sort"

// SortReviews puts reviews in the order every store lists them: by
// reviewed_at (a review without one first), then by id.
func SortReviews(reviews []Review) {
	sort.SliceStable(reviews, func(i, j int) bool {
		a, b := reviews[i].ReviewedAt, reviews[j].ReviewedAt
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case !a.Equal(*b):
			return a.Before(*b)
		}
		return reviews[i].ID < reviews[j].ID
	})
}
