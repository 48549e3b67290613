package forge

func (c Comment) MarkerBy(kind, bot string) (Marker, bool) {
	return FindMarker(c.Body, kind)
}

func read(c Comment) { _, _ = forge.FindMarker(c.Body, "claim") }
