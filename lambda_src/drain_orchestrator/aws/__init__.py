"""boto3 adapters: they call AWS and translate answers into plain data; they make no decisions."""
