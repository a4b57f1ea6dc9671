"""One package per gRPC service: pure logic beside a thin server.py."""
