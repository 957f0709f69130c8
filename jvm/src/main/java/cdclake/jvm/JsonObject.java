package cdclake.jvm;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * A parsed JSON object ({@link Json#parse}): its names in first-seen order, a repeated name
 * keeping its first place and its last value (as a Python dict does). Names and values sit in
 * two arrays searched in order, each name beside its hash: a message's objects are small, so this
 * is cheaper to fill and to read than a {@link java.util.LinkedHashMap}'s table and entries
 * ({@link JsonReader} hands out one interned instance of each name, so most lookups end at the
 * identity test).
 */
final class JsonObject extends AbstractMap<String, Object> {
    private String[] names = new String[8];
    private int[] hashes = new int[8];
    private Object[] values = new Object[8];
    private int size;

    private int indexOf(Object name, int hash) {
        for (int i = 0; i < size; i++) {
            if (names[i] == name || hashes[i] == hash && names[i].equals(name)) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public Object get(Object name) {
        int i = name == null ? -1 : indexOf(name, name.hashCode());
        return i < 0 ? null : values[i];
    }

    @Override
    public boolean containsKey(Object name) {
        return name != null && indexOf(name, name.hashCode()) >= 0;
    }

    @Override
    public Object put(String name, Object value) {
        int hash = name.hashCode();
        int i = indexOf(name, hash);
        if (i >= 0) {
            Object old = values[i];
            values[i] = value;
            return old;
        }
        if (size == names.length) {
            names = Arrays.copyOf(names, size * 2);
            hashes = Arrays.copyOf(hashes, size * 2);
            values = Arrays.copyOf(values, size * 2);
        }
        names[size] = name;
        hashes[size] = hash;
        values[size++] = value;
        return null;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public Set<Entry<String, Object>> entrySet() {
        return new AbstractSet<>() {
            @Override
            public int size() {
                return size;
            }

            @Override
            public Iterator<Entry<String, Object>> iterator() {
                return new Iterator<>() {
                    private int next;

                    @Override
                    public boolean hasNext() {
                        return next < size;
                    }

                    @Override
                    public Entry<String, Object> next() {
                        if (next >= size) {
                            throw new NoSuchElementException();
                        }
                        int i = next++;
                        return new SimpleImmutableEntry<>(names[i], values[i]);
                    }
                };
            }
        };
    }
}
