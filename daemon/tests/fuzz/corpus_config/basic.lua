return {
  socket = { path = "/run/holdfast/holdfast.sock", mode = "0660" },
  redis = { address = "unix:/run/redis/redis.sock", pool_size = 2 },
  limits = { max_ids = 64 },
  namespaces = { seat = { default_ttl_ms = 60000, confirmable = true } },
}
