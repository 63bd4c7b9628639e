package host

import "reflect"

// Add adds o's counters to s, field by field (queue by queue, cause by
// cause): the shards of one port, summed for the port's metrics. A gauge
// sums as its shards' share of the port does; a flag keeps s's.
func (s *Snapshot) Add(o *Snapshot) { addValues(reflect.ValueOf(s).Elem(), reflect.ValueOf(o).Elem()) }

func addValues(dst, src reflect.Value) {
	switch dst.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		dst.SetUint(dst.Uint() + src.Uint())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		dst.SetInt(dst.Int() + src.Int())
	case reflect.Float32, reflect.Float64:
		dst.SetFloat(dst.Float() + src.Float())
	case reflect.Array:
		for i := range dst.Len() {
			addValues(dst.Index(i), src.Index(i))
		}
	case reflect.Slice:
		for i := range min(dst.Len(), src.Len()) {
			addValues(dst.Index(i), src.Index(i))
		}
	case reflect.Struct:
		for i := range dst.NumField() {
			if f := dst.Field(i); f.CanSet() {
				addValues(f, src.Field(i))
			}
		}
	}
}
