package io.delayq.dispatch;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;

import io.quarkus.arc.ClientProxy;

/**
 * Reaches package-private members of the dispatch beans from a {@code @QuarkusTest}. Quarkus loads
 * an extension's runtime classes and the test classes in different class loaders, so they are not
 * in the same run-time package and the access the compiler allows fails with IllegalAccessError;
 * reflection does not have that limit.
 */
final class Internals {
    private Internals() {
    }

    /** Invokes the method {@code name} (the one with as many parameters as {@code args}) on a bean or plain object. */
    static Object call(Object target, String name, Object... args) {
        Object self = target instanceof ClientProxy ? ClientProxy.unwrap(target) : target;
        for (Class<?> c = self.getClass(); c != null; c = c.getSuperclass()) {
            Method m = Arrays.stream(c.getDeclaredMethods())
                    .filter(x -> x.getName().equals(name) && x.getParameterCount() == args.length).findFirst().orElse(null);
            if (m != null) {
                m.setAccessible(true);
                try {
                    return m.invoke(self, args);
                } catch (InvocationTargetException e) {
                    throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        throw new IllegalArgumentException("no method " + name + " with " + args.length + " parameter(s) on " + self.getClass());
    }

    /** Reads the field {@code name} of a bean or plain object. */
    static Object field(Object target, String name) {
        Object self = target instanceof ClientProxy ? ClientProxy.unwrap(target) : target;
        for (Class<?> c = self.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(self);
            } catch (NoSuchFieldException e) {
                // look in the superclass
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalArgumentException("no field " + name + " on " + self.getClass());
    }
}
