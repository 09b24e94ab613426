//! Stateless SQL transforms (`[transform] sql = "SELECT ... FROM source"`) run with DataFusion:
//! planned once at start, fed batch by batch.
