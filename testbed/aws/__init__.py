"""The test bed's AWS emulator: moto server with the bed's extensions, one module per service
(server.py starts it and routes the bed's own control requests)."""
