"""The daemon's Unix-socket RPC (schema/rpc.md)."""
