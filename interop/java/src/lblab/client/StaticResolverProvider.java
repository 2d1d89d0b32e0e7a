package lblab.client;

import io.grpc.EquivalentAddressGroup;
import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;
import io.grpc.NameResolverRegistry;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * A fixed list of addresses as a name resolver: target {@code lblab-static:///HOST:PORT,HOST:PORT}
 * resolves to one EquivalentAddressGroup per address, and no service config (the channel then
 * uses its default service config). grpc-java 1.41's own resolvers give one DNS name per target.
 */
public final class StaticResolverProvider extends NameResolverProvider {
  public static final String SCHEME = "lblab-static";
  private static boolean registered;

  /** Registers the scheme in grpc-java's default registry (once). */
  public static synchronized void register() {
    if (!registered) {
      NameResolverRegistry.getDefaultRegistry().register(new StaticResolverProvider());
      registered = true;
    }
  }

  /** The target for these comma-separated HOST:PORT addresses. */
  public static String target(String addresses) {
    return SCHEME + ":///" + addresses;
  }

  @Override
  protected boolean isAvailable() {
    return true;
  }

  @Override
  protected int priority() {
    return 5;
  }

  @Override
  public String getDefaultScheme() {
    return SCHEME;
  }

  @Override
  public NameResolver newNameResolver(URI uri, NameResolver.Args args) {
    if (!SCHEME.equals(uri.getScheme())) return null;
    List<EquivalentAddressGroup> groups = new ArrayList<>();
    for (String a : uri.getPath().substring(1).split(",")) {
      if (a.isEmpty()) continue;
      int colon = a.lastIndexOf(':');
      groups.add(new EquivalentAddressGroup(
          new InetSocketAddress(a.substring(0, colon), Integer.parseInt(a.substring(colon + 1)))));
    }
    return new NameResolver() {
      @Override
      public String getServiceAuthority() {
        return "lblab-fleet";
      }

      @Override
      public void start(Listener2 listener) {
        listener.onResult(ResolutionResult.newBuilder().setAddresses(groups).build());
      }

      @Override
      public void shutdown() {}
    };
  }
}
