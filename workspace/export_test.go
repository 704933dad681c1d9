package workspace

// RenderItem is renderItem, for the Ops tests over a file tree.
var RenderItem = renderItem

// GroupDigits is groupDigits, for the Ops tests over a file tree.
var GroupDigits = groupDigits
