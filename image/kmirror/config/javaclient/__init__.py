"""Java client settings -> librdkafka: key translation, Java security (JKS, JAAS) and the
check against librdkafka's own property list."""
