#!/bin/sh
# The test guest's user-data template: the hook substitutes the @NAMES@, the guest's /init
# runs the result, and the test reads these lines on the serial console.
echo "frugal-guest: instance=@INSTANCE@ provider-id=@PROVIDER_ID@ group=@GROUP@"
echo "frugal-guest: labels=@NODE_LABELS@ taints=@NODE_TAINTS@ secret=@ENV:LIBVIRT_TEST_SECRET@ end"
