"""The gRPC transport: servicers, converters and interceptors. The only package importing grpc."""
