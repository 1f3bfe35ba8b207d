"""Decoding within limits: what one record may cost to read (`limits`), Avro read with each
block counted first (`avro_reader`), Protobuf counted on the wire (`protobuf_count`). Loaded by
the first record that needs a check: the invocation's limits and deadline the decoders read are
`deadline.DECODING`, and the size below which a document is never checked is
`messages.UNCHECKED_BYTES`."""
