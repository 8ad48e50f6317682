"""grpc.health.v1 messages in a private descriptor pool, and a stub for Check.

Registering grpc.health.v1.* in protobuf's default pool would clash with
grpcio-health-checking loaded in the same process, so the messages are built
from the descriptor set the package build stored (setup.py).
"""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kjit._health_descriptor import SERIALIZED

CHECK_METHOD = "/grpc.health.v1.Health/Check"

_pool = descriptor_pool.DescriptorPool()
for _file in descriptor_pb2.FileDescriptorSet.FromString(SERIALIZED).file:
    _pool.Add(_file)

HealthCheckRequest = message_factory.GetMessageClass(_pool.FindMessageTypeByName("grpc.health.v1.HealthCheckRequest"))
HealthCheckResponse = message_factory.GetMessageClass(_pool.FindMessageTypeByName("grpc.health.v1.HealthCheckResponse"))
_STATUS = HealthCheckResponse.DESCRIPTOR.fields_by_name["status"].enum_type


def status_name(response) -> str:
    """"SERVING", "NOT_SERVING", "UNKNOWN", "SERVICE_UNKNOWN"."""
    value = _STATUS.values_by_number.get(response.status)
    return value.name if value is not None else str(response.status)


class HealthStub:
    """The Check method, as a generated stub would offer it."""

    def __init__(self, channel):
        self.Check = channel.unary_unary(CHECK_METHOD, request_serializer=HealthCheckRequest.SerializeToString,
                                         response_deserializer=HealthCheckResponse.FromString)
